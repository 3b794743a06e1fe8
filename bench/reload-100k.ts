/**
 * reload-100k: a tab reloads. One device engine holds 100 sources × 1,000 readings in one-minute
 * windows, one reading per cell: 100,000 live cells, bound to a Yjs doc that a provider such as
 * y-indexeddb persisted. A reload restores the engine from its checkpoint (or its write-ahead log)
 * and binds it to the doc loaded again; the new session's Yjs client writes the engine's state in
 * place of the earlier session's entries, and first contact retires the cells that left live state
 * while no doc was bound.
 *
 * Contenders, on the same prepared checkpoint and persisted doc:
 * - reload: restore, load the persisted doc, `bindDoc`: what a reload costs the page.
 * - fresh-doc: restore, `bindDoc` onto an empty doc: the same state written where nothing was (a
 *   first bind, or a device whose doc was lost).
 * - restore-load: restore and load the persisted doc, no binding: the floor under both.
 *
 * Figures: time per reload (ms, CPU and elapsed); the reload's share of the first bind and of the
 * floor; `bytesWritten`, the bytes of the updates the bind makes (what the provider then sends the
 * relay, and every peer applies). The doc-size measurement runs once, at bind (`now` is fixed).
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/reload-100k.ts
 */
import { type Engine, type EngineCheckpoint, type EngineOptions, manual, type StreamEvent, TidemarkEngine, tumbling } from '@tidemark/engine'
import { bindDoc } from '@tidemark/yjs'
import * as Y from 'yjs'
import { type Contender, type Outcome, windowTotalId, type WindowTotals } from './harness/contender.ts'
import type { ProfileDefinition } from './harness/profile.ts'
import { runProfileCli } from './harness/profile.ts'
import { isMain } from './measure.ts'

const MINUTE = 60_000
const T0 = 1_700_000_000_000 - (1_700_000_000_000 % MINUTE)
const SOURCES = 100
const READINGS = 1000
const KEYS = 10
/** What the persistence provider's own writes are marked with: not what the bind sends. */
const LOADED = 'persistence'
const OPTIONS: EngineOptions = { windows: tumbling(MINUTE), watermark: manual(), replicaId: 'device', now: () => T0 }

/** One source's readings: every 6 s, keys in turn, so each of a window's 10 readings has a cell of its own. */
export function sourceReadings(source: string): StreamEvent[] {
  return Array.from({ length: READINGS }, (_, i) => ({ id: `${source}-${i + 1}`, source, seq: i + 1, ts: T0 + i * 6000, key: `k${i % KEYS}`, value: i % 97 }))
}

/** What the earlier session left: the engine's checkpoint and its doc as persisted. */
export interface EarlierSession {
  readonly checkpoint: EngineCheckpoint
  readonly persisted: Uint8Array
  readonly cells: number
}

/** The earlier session: ingests every source with its doc bound, then is checkpointed and its doc encoded. */
export function earlierSession(): EarlierSession {
  const engine = new TidemarkEngine(OPTIONS)
  const doc = new Y.Doc()
  bindDoc(engine, doc)
  for (let s = 0; s < SOURCES; s++) engine.ingest(sourceReadings(`d${s}`))
  const session = { checkpoint: engine.checkpoint(), persisted: Y.encodeStateAsUpdate(doc), cells: engine.stats().cells }
  void engine.close()
  return session
}

function restored(session: EarlierSession): Engine {
  const engine = new TidemarkEngine(OPTIONS)
  engine.restore(session.checkpoint)
  return engine
}

/** Counts the bytes of the updates `doc` makes from now on, except the persistence provider's. */
function bytesWritten(doc: Y.Doc): () => number {
  let bytes = 0
  doc.on('update', (update: Uint8Array, origin: unknown) => {
    if (origin !== LOADED) bytes += update.byteLength
  })
  return () => bytes
}

function outcome(engine: Engine, doc: Y.Doc, record: boolean, written: number): Outcome {
  const stats = engine.stats()
  const end = { liveWindows: stats.openWindows, cells: stats.cells, bytesWritten: written }
  const base: Outcome = { end, counts: {}, watermark: Number.POSITIVE_INFINITY, state: [engine, doc], close: () => void engine.close() }
  if (!record) return base
  const totals: WindowTotals = new Map()
  for (const r of engine.results()) totals.set(windowTotalId(r.window, r.key, r.start), { end: r.end, count: r.count, sum: r.sum })
  return { ...base, totals }
}

function reloadContender(session: EarlierSession, persisted: boolean): Contender {
  return {
    name: persisted ? 'reload' : 'fresh-doc',
    label: persisted
      ? 'Tidemark reloaded: restore the checkpoint, load the persisted doc, bindDoc (the new session writes the state in place of the earlier one)'
      : 'Tidemark bound where nothing was: restore the checkpoint, bindDoc onto an empty doc (the whole state written)',
    run: ({ probe, record }) => {
      const engine = restored(session)
      const doc = new Y.Doc()
      if (persisted) Y.applyUpdate(doc, session.persisted, LOADED)
      probe.tick()
      const written = bytesWritten(doc)
      bindDoc(engine, doc)
      probe.tick()
      return outcome(engine, doc, record, written())
    },
  }
}

function restoreLoadContender(session: EarlierSession): Contender {
  return {
    name: 'restore-load',
    label: 'floor: restore the checkpoint and load the persisted doc, no binding',
    run: ({ probe, record }) => {
      const engine = restored(session)
      const doc = new Y.Doc()
      Y.applyUpdate(doc, session.persisted, LOADED)
      probe.tick()
      return outcome(engine, doc, record, 0)
    },
  }
}

export function define(): ProfileDefinition {
  const session = earlierSession()
  return {
    name: 'reload-100k',
    description: `a reload binds an engine restored from its checkpoint (${(session.cells / 1000).toFixed(0)}k live cells, ${SOURCES} sources) to its persisted doc (${(session.persisted.byteLength / 2 ** 20).toFixed(2)} MiB)`,
    events: session.cells,
    batches: 1,
    contenders: [reloadContender(session, true), reloadContender(session, false), restoreLoadContender(session)],
    ratios: [
      { name: 'reload/fresh', label: 'a reload as a share of binding the same state onto an empty doc', subject: 'reload', reference: 'fresh-doc', format: 'percent' },
      { name: 'reload/floor', label: 'a reload as a share of restoring and loading alone', subject: 'reload', reference: 'restore-load', format: 'percent' },
    ],
    agree: [
      ['reload', 'restore-load'],
      ['fresh-doc', 'restore-load'],
    ],
    showTimes: true,
    showGauges: ['bytesWritten'],
    rounds: 7,
    warmup: 2,
  }
}

if (isMain(import.meta.url)) await runProfileCli(define)
