/**
 * The storm page: a device (`?role=device`) or a dashboard (`?role=dashboard`) of one fleet.
 * Claims a source (Web Locks), opens an engine over IndexedDB whose lattice state lives in a
 * Y.Doc synced with the server (y-websocket, jittered reconnects) and with the other tabs of
 * its browser context (BroadcastChannel). A device ingests readings on demand and reports its
 * durable batches to the driver; every page reports its window values and the offline/online
 * events it saw.
 *
 * Query: `server` (ws URL), `room`, `role`, `seed` (readings and reconnect jitter), `prefix`
 * (source claim prefix), `shell=1` (service worker, for offline reloads).
 */
import { type StreamEvent, tumbling } from '@tidemark/engine'
import { claimSource, indexedDbPersistence, openEngine } from '@tidemark/idb'
import { BroadcastChannelProvider, bindDoc, connectWebsocket } from '@tidemark/yjs'
import { seededRandom } from '@tidemark/seeded-random'
import * as Y from 'yjs'
import {
  STORM_LATENESS_MS,
  STORM_WINDOW_MS,
  type StormBatchReport,
  type StormPageApi,
  type StormSnapshot,
  type StormStatusChange,
  type StormTransition,
  stormReading,
} from './stormApi.ts'
import { bootPage, setText, shellReady } from './pageBoot.ts'

const params = new URLSearchParams(location.search)
const role = params.get('role') === 'dashboard' ? 'dashboard' : 'device'
const server = params.get('server') ?? 'ws://127.0.0.1:1234'
const room = params.get('room') ?? 'storm'
const seed = Number(params.get('seed') ?? 1)
/** Durable reports wait this long to travel together: one binding call (a driver round trip) per flush, not per batch. */
const REPORT_EVERY_MS = 250

// Registered before anything slow, so no transition is missed.
const transitions: StormTransition[] = []
addEventListener('offline', () => transitions.push({ at: Date.now(), online: false }))
addEventListener('online', () => transitions.push({ at: Date.now(), online: true }))

async function start(): Promise<StormPageApi> {
  if (params.get('shell') === '1') await shellReady()
  const claim = await claimSource({ prefix: params.get('prefix') ?? `storm-${role}` })
  const source = claim.source
  const doc = new Y.Doc()
  const errors: string[] = []
  const engine = await openEngine({
    windows: tumbling(STORM_WINDOW_MS),
    allowedLateness: STORM_LATENESS_MS,
    // Nothing leaves live state during a test: totals are read from results().
    retention: 1e12,
    persistence: indexedDbPersistence({ name: `tidemark-${source}`, claim }),
  })
  bindDoc(engine, doc, { onError: (error) => errors.push(`replication: ${error.message}`) })
  const tabs = new BroadcastChannelProvider(doc, `tidemark:storm:${room}`)
  const connection = connectWebsocket(doc, { url: server, room, jitter: { baseMs: 250, capMs: 2_000, initialMs: 200, random: seededRandom(seed) } })
  // Chromium's offline emulation leaves open WebSockets alive (playwright#4910), and a real
  // network drop may take minutes to surface: follow the browser's online/offline signal.
  const statusChanges: StormStatusChange[] = []
  connection.provider.on('status', ({ status }: { status: string }) => statusChanges.push({ at: Date.now(), status }))
  addEventListener('offline', () => connection.provider.disconnect())
  addEventListener('online', () => connection.provider.connect())
  if (!navigator.onLine) connection.provider.disconnect()

  // Seqs 1..n are this device's readings, each either applied or on the late lane (also after a reload).
  const recovered = engine.stats()
  let produced = recovered.applied + recovered.lateLane + recovered.lateLaneTrimmed
  let durable = produced
  let accepted = 0
  let beyondLateness = 0
  let timer: ReturnType<typeof setTimeout> | null = null
  const pending = new Set<Promise<void>>()

  let unreported: StormBatchReport[] = []
  let flushTimer: ReturnType<typeof setTimeout> | null = null
  const flush = async (): Promise<void> => {
    if (flushTimer !== null) clearTimeout(flushTimer)
    flushTimer = null
    if (unreported.length === 0) return
    const reports = unreported
    unreported = []
    await window.stormReport?.(reports)
  }
  const report = (batch: StormBatchReport): void => {
    unreported.push(batch)
    flushTimer ??= setTimeout(() => void flush().catch((error: unknown) => errors.push(`report: ${String(error)}`)), REPORT_EVERY_MS)
  }

  // One batch per tick and nothing else: the page must stay free to notice offline/online on time.
  const pump = (size: number, everyMs: number): void => {
    const events: StreamEvent[] = []
    const from = produced + 1
    for (let seq = from; seq < from + size; seq++) events.push(stormReading(seed, source, seq))
    produced = from + size - 1
    const to = produced
    const receipt = engine.ingest(events)
    accepted += receipt.accepted
    beyondLateness += receipt.beyondLateness
    const { duplicates, rejected } = receipt
    const done = receipt.durable.then(
      () => {
        durable = Math.max(durable, to)
        report({ source, from, to, accepted: receipt.accepted, beyondLateness: receipt.beyondLateness, duplicates, rejected })
      },
      (error: unknown) => {
        errors.push(`durable ${from}..${to}: ${error instanceof Error ? error.message : String(error)}`)
      },
    )
    pending.add(done)
    void done.finally(() => pending.delete(done))
    timer = setTimeout(() => pump(size, everyMs), everyMs)
  }

  const snapshot = (): StormSnapshot => {
    const stats = engine.stats()
    const rows: string[] = []
    let counted = 0
    for (const r of engine.results()) {
      rows.push(`${r.window}|${r.key}|${r.start}|${r.count}|${r.sum}`)
      counted += r.count
    }
    rows.sort()
    return {
      role,
      source,
      seed,
      produced,
      durable,
      accepted,
      beyondLateness,
      lateLane: stats.lateLane,
      lateIds: engine.lateEvents().map((late) => late.event.id),
      counted,
      digest: rows.join('\n'),
      windows: rows.length,
      syncState: engine.syncStatus().state,
      online: navigator.onLine,
      invalidRemote: stats.anomalies.invalid_remote_cell,
      remoteAnomalies: [...stats.remoteAnomalies],
      errors: [...errors],
    }
  }

  let renderQueued = false
  const render = (): void => {
    if (renderQueued) return
    renderQueued = true
    setTimeout(() => {
      renderQueued = false
      const stats = engine.stats()
      setText('online', navigator.onLine ? 'online' : 'offline')
      setText('sync', engine.syncStatus().state)
      setText('status', `${stats.applied} events applied here, ${stats.cells} cells, late lane ${stats.lateLane}`)
    }, 250)
  }
  setText('role', role)
  setText('source', source)
  engine.subscribe(render)
  addEventListener('online', render)
  addEventListener('offline', render)
  render()

  return {
    source,
    start({ batch, everyMs }) {
      if (role === 'device' && timer === null) pump(batch, everyMs)
    },
    async stop() {
      if (timer !== null) clearTimeout(timer)
      timer = null
      await Promise.all([...pending])
      await flush()
    },
    snapshot,
    transitions: () => [...transitions],
    statusChanges: () => [...statusChanges],
    writeMalformed(count) {
      const meta = doc.getMap('tidemark:meta')
      const fake = `hostile-${source}`
      doc.transact(() => {
        // Our own configuration, so the fake replica is judged entry by entry rather than refused whole.
        meta.set(fake, [...meta.values()][0])
        const log = doc.getArray(`tidemark:replica:${fake}`)
        // A well-formed group whose one cell counts NaN events, and a clock naming another writer.
        const nanCell = new Uint8Array(new Float64Array([Number.NaN, 1, 1, 1, 1, 1]).buffer)
        for (let k = 0; k < count; k++) {
          log.push([k % 2 === 0 ? ['g', 'tumbling:1000', 0, 'x', '["k0"]', nanCell] : ['k', 'nobody', 'x', 1, 2, 3, 9, 1]])
        }
      })
    },
    writeGarbageFrames(count) {
      const channel = new BroadcastChannel(`tidemark:storm:${room}`)
      // Frames: kind 9 (no such kind); kind 0 (sync) from peer 77 to everyone, an update (2) of 5 bytes that do not decode.
      for (let k = 0; k < count; k++) channel.postMessage(new Uint8Array(k % 2 === 0 ? [9, 77, 0] : [0, 77, 0, 2, 5, 1, 2, 3, 4, 5]))
      channel.close()
    },
    async close() {
      if (timer !== null) clearTimeout(timer)
      await flush()
      connection.destroy()
      tabs.destroy()
      await engine.close()
    },
  }
}

bootPage(
  start,
  'status',
  (api) => {
    window.storm = api
  },
  (reason) => {
    window.stormError = reason
  },
)
