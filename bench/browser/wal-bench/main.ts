/**
 * The WAL benchmarks' page. `?mode=` picks the work; the driver (bench/browser/wal-*.ts)
 * reads `window.__walBench` when it appears.
 *
 *   mode=append&events=N&batch=B&rounds=R   append throughput of every contender, R rounds
 *   mode=setup&events=N&batch=B             write N events into every store for recovery
 *   mode=recover&store=S                    cold-start recovery of one store (a fresh page)
 */
import { createEngine, type Engine, type StreamEvent } from '@tidemark/engine'
import { indexedDbPersistence, openEngine, recoveryReport } from '@tidemark/idb'
import { bindDoc } from '@tidemark/yjs'
import { IndexeddbPersistence, storeState } from 'y-indexeddb'
import * as Y from 'yjs'
import { deleteDatabase, openRawStore, putBatch, putBatches, readAllBatches, settled } from './rawStore.ts'
import type { PageOutcome, Timing } from './result.ts'
import { benchWindows, lateReadingBatches, readingBatches } from './workload.ts'

const params = new URLSearchParams(location.search)
const number = (name: string, fallback: number): number => Number(params.get(name) ?? fallback)

/** Yields one macrotask: each batch arrives in its own task, as from a socket or a timer. */
const channel = new MessageChannel()
const waiting: (() => void)[] = []
channel.port1.onmessage = () => waiting.shift()?.()
function nextTask(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve)
    channel.port2.postMessage(0)
  })
}

function ingestOp(events: readonly StreamEvent[]) {
  return { kind: 'ingest' as const, now: Date.now(), events, rejected: {} }
}

/** The Yjs updates a replica publishes for these batches (an engine bound to a doc), one per batch. */
function yjsUpdates(batches: readonly StreamEvent[][]): Uint8Array[] {
  const doc = new Y.Doc()
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  const engine = createEngine({ windows: benchWindows, replicaId: 'bench' })
  bindDoc(engine, doc)
  for (const batch of batches) engine.ingest(batch)
  void engine.close()
  return updates
}

async function openYjsStore(name: string): Promise<{ doc: Y.Doc; store: IndexeddbPersistence; db: IDBDatabase }> {
  const doc = new Y.Doc()
  const store = new IndexeddbPersistence(name, doc)
  await store.whenSynced
  return { doc, store, db: store.db as IDBDatabase }
}

type Feed = 'sequential' | 'stream' | 'burst' | 'one-task'

/**
 * Sends `count` items the way `how` says and resolves once every one is committed:
 * `sequential` waits for each commit before the next send, `stream` sends one per task
 * without waiting, `burst` sends ten per task, `one-task` sends everything in one task.
 */
async function feed(count: number, how: Feed, send: (i: number) => Promise<unknown>): Promise<void> {
  if (how === 'sequential') {
    for (let i = 0; i < count; i++) await send(i)
    return
  }
  const perTask = how === 'burst' ? 10 : how === 'one-task' ? count : 1
  const pending: Promise<unknown>[] = []
  for (let i = 0; i < count; i++) {
    pending.push(send(i))
    if ((i + 1) % perTask === 0) await nextTask()
  }
  await Promise.all(pending)
}

function at<T>(items: readonly T[], i: number): T {
  return items[i] as T
}

interface Contender {
  readonly name: string
  prepare(name: string): Promise<{ run(): Promise<void>; bytes?: () => number; close(): Promise<void> }>
}

function appendContenders(batches: readonly StreamEvent[][], lateBatches: readonly StreamEvent[][], updates: readonly Uint8Array[]): Contender[] {
  const raw = (how: Feed): Contender => ({
    name: `raw-put/${how}`,
    async prepare(name) {
      const db = await openRawStore(name)
      // one-task: every batch in a single transaction, the fastest raw write there is.
      const run = how === 'one-task' ? () => putBatches(db, batches) : () => feed(batches.length, how, (i) => putBatch(db, i, at(batches, i)))
      return { run, close: async () => db.close() }
    },
  })
  const wal = (how: Feed, options: { coalesce?: boolean; durability?: IDBTransactionDurability } = {}): Contender => ({
    name: `wal-append/${how}${options.coalesce === false ? '/no-coalesce' : ''}${options.durability === undefined ? '' : `/${options.durability}`}`,
    async prepare(name) {
      const persistence = indexedDbPersistence({ name, ...options })
      await persistence.open()
      return {
        run: () => feed(batches.length, how, (i) => persistence.append(ingestOp(at(batches, i)))),
        bytes: () => persistence.stats().walBytes,
        close: () => persistence.close(),
      }
    },
  })
  const engineWal = (how: Feed, late = false): Contender => ({
    name: `engine+wal/${how}${late ? '/late' : ''}`,
    async prepare(name) {
      const engine = await openEngine({ windows: benchWindows, persistence: indexedDbPersistence({ name }) })
      const input = late ? lateBatches : batches
      return {
        run: () => feed(input.length, how, (i) => engine.ingest(at(input, i)).durable),
        close: () => engine.close(),
      }
    },
  })
  const yjs = (how: Feed): Contender => ({
    name: `y-indexeddb/${how}`,
    async prepare(name) {
      const { doc, store, db } = await openYjsStore(name)
      return {
        // y-indexeddb gives no promise per update: a later readonly transaction on its store waits for the writes.
        run: () =>
          feed(updates.length, how, async (i) => {
            Y.applyUpdate(doc, at(updates, i))
            if (how === 'sequential') await settled(db, 'updates')
          }).then(() => settled(db, 'updates')),
        close: () => store.destroy(),
      }
    },
  })
  return [
    raw('sequential'),
    wal('sequential'),
    engineWal('sequential'),
    yjs('sequential'),
    raw('stream'),
    wal('stream'),
    engineWal('stream'),
    // 10% of the readings beyond lateness: the late lane fills, trims, and goes to its store with each checkpoint.
    engineWal('stream', true),
    yjs('stream'),
    raw('burst'),
    wal('burst'),
    raw('one-task'),
    wal('one-task'),
    wal('burst', { coalesce: false }),
    wal('sequential', { durability: 'strict' }),
  ]
}

async function append(): Promise<Timing[]> {
  const events = number('events', 200_000)
  const batches = readingBatches(events, number('batch', 1_000))
  const updates = yjsUpdates(batches)
  const contenders = appendContenders(batches, lateReadingBatches(events, number('batch', 1_000)), updates)
  const rounds = number('rounds', 3)
  const timings: Timing[] = []
  // Engine alone, without storage, for context.
  for (let round = 0; round < rounds; round++) {
    const engine = createEngine({ windows: benchWindows })
    const t0 = performance.now()
    for (const batch of batches) engine.ingest(batch)
    timings.push({ name: 'engine-only', ms: performance.now() - t0, events })
  }
  for (let round = 0; round < rounds; round++) {
    // Rotate the order every round, so drift of the machine falls on every contender alike.
    const order = contenders.map((_, i) => contenders[(i + round) % contenders.length] as Contender)
    for (const contender of order) {
      const name = `bench-${contender.name.replaceAll('/', '-')}`
      await deleteDatabase(name)
      const prepared = await contender.prepare(name)
      const t0 = performance.now()
      await prepared.run()
      const ms = performance.now() - t0
      const bytes = prepared.bytes?.()
      await prepared.close()
      await deleteDatabase(name)
      timings.push(bytes === undefined ? { name: contender.name, ms, events } : { name: contender.name, ms, events, bytes })
      setStatus(`round ${round + 1}: ${contender.name} ${ms.toFixed(0)} ms`)
    }
  }
  return timings
}

/** Stores the recovery bench reads back, each written with N events. */
const RECOVERY_STORES = ['wal-checkpointed', 'wal-closed', 'wal-no-checkpoint', 'raw', 'y-indexeddb'] as const

async function setup(): Promise<Timing[]> {
  const events = number('events', 1_000_000)
  const batches = readingBatches(events, number('batch', 1_000))
  const timings: Timing[] = []
  const time = async (name: string, work: () => Promise<string | undefined>): Promise<void> => {
    await deleteDatabase(`recover-${name}`)
    const t0 = performance.now()
    const note = await work()
    timings.push(note === undefined ? { name, ms: performance.now() - t0, events } : { name, ms: performance.now() - t0, events, note })
    setStatus(`${name} written`)
  }
  const never = { events: 1e12, ms: 1e12 }
  /** Feeds batches `from..to` into an engine over the store; closes it (a last checkpoint) or drops it, as a crash would. */
  const walEngine = async (name: string, from: number, to: number, checkpointEvery: { events: number; ms: number } | undefined, close: boolean) => {
    const persistence = indexedDbPersistence({ name: `recover-${name}` })
    const engine: Engine = await openEngine(checkpointEvery === undefined ? { windows: benchWindows, persistence } : { windows: benchWindows, persistence, checkpointEvery })
    await feed(to - from, 'stream', (i) => engine.ingest(at(batches, from + i)).durable)
    const { walRecords, walBytes } = engine.stats()
    if (close) await engine.close()
    return `${walRecords} log records, ${(walBytes / 1e6).toFixed(1)} MB left in the log`
  }
  // The most the default cadence (100k events) leaves to replay: a checkpoint 100k events before the crash.
  const tail = Math.min(batches.length, Math.ceil(100_000 / number('batch', 1_000)))
  await time('wal-checkpointed', async () => {
    await walEngine('wal-checkpointed', 0, batches.length - tail, undefined, true)
    return walEngine('wal-checkpointed', batches.length - tail, batches.length, never, false)
  })
  await time('wal-closed', () => walEngine('wal-closed', 0, batches.length, undefined, true))
  await time('wal-no-checkpoint', () => walEngine('wal-no-checkpoint', 0, batches.length, never, false))
  await time('raw', async () => {
    const db = await openRawStore('recover-raw')
    await feed(batches.length, 'stream', (i) => putBatch(db, i, at(batches, i)))
    db.close()
    return undefined
  })
  const updates = yjsUpdates(batches)
  await time('y-indexeddb', async () => {
    const { doc, store, db } = await openYjsStore('recover-y-indexeddb')
    for (const update of updates) Y.applyUpdate(doc, update)
    await settled(db, 'updates')
    // What y-indexeddb does 1 s after 500 updates: merge them into one; done here, so recovery reads its steady state.
    await storeState(store, true)
    await settled(db, 'updates')
    await store.destroy()
    return `${updates.length} updates, ${(updates.reduce((n, u) => n + u.length, 0) / 1e6).toFixed(1)} MB`
  })
  return timings
}

async function recover(): Promise<Timing[]> {
  const store = params.get('store') as (typeof RECOVERY_STORES)[number]
  const name = `recover-${store}`
  if (store.startsWith('wal-')) {
    const t0 = performance.now()
    const engine = await openEngine({ windows: benchWindows, persistence: indexedDbPersistence({ name }) })
    const ms = performance.now() - t0
    const report = recoveryReport(engine)
    const applied = engine.stats().applied
    // Crash again rather than close: close would checkpoint and change the store for the next round.
    return [
      {
        name: store,
        ms,
        events: applied,
        note: `checkpoint ${report?.checkpointLsn ?? 'none'}, replayed ${report?.replayedEvents ?? 0} events in ${report?.replayedRecords ?? 0} records; read ${report?.phases.readMs.toFixed(0)} ms, restore ${report?.phases.restoreMs.toFixed(0)} ms, replay ${report?.phases.replayMs.toFixed(0)} ms`,
      },
    ]
  }
  if (store === 'raw') {
    const t0 = performance.now()
    const db = await openRawStore(name)
    const batches = await readAllBatches<StreamEvent[]>(db)
    const read = performance.now() - t0
    const engine = createEngine({ windows: benchWindows })
    for (const batch of batches) engine.ingest(batch)
    const rebuilt = performance.now() - t0
    db.close()
    const events = batches.reduce((n, b) => n + b.length, 0)
    return [
      { name: 'raw read', ms: read, events },
      { name: 'raw read + engine rebuild', ms: rebuilt, events: engine.stats().applied },
    ]
  }
  const t0 = performance.now()
  const { doc, store: yStore } = await openYjsStore(name)
  const loaded = performance.now() - t0
  const engine = createEngine({ windows: benchWindows, replicaId: 'reader' })
  bindDoc(engine, doc)
  const merged = performance.now() - t0
  await yStore.destroy()
  const cells = engine.stats().cells
  return [
    { name: 'y-indexeddb load', ms: loaded, events: 0, note: `${Y.encodeStateAsUpdate(doc).length} bytes of doc` },
    { name: 'y-indexeddb load + engine merge', ms: merged, events: 0, note: `${cells} live cells` },
  ]
}

function setStatus(text: string): void {
  const element = document.getElementById('status')
  if (element !== null) element.textContent = text
}

const modes: Record<string, () => Promise<Timing[]>> = { append, setup, recover }
const mode = modes[params.get('mode') ?? '']
;(mode === undefined ? Promise.reject(new Error(`unknown mode ${params.get('mode')}`)) : mode()).then(
  (timings) => {
    const outcome: PageOutcome = { timings }
    window.__walBench = outcome
    setStatus('done')
  },
  (error: unknown) => {
    window.__walBenchError = error instanceof Error ? `${error.name}: ${error.message}\n${error.stack}` : String(error)
    setStatus(`failed: ${window.__walBenchError}`)
  },
)
