/**
 * The storm page: a device or a dashboard of one fleet, as `@tidemark/storm`'s driver opens
 * it. Claims a source (Web Locks), opens an engine over IndexedDB whose lattice state lives in
 * a Y.Doc synced with the server (y-websocket, seeded jittered reconnects) and with the other
 * tabs of its browser context (BroadcastChannel), and hands it to the page side of the storm.
 *
 * Query: the storm's `role`, `server`, `room`, `seed`; the page's own `prefix` (source claim
 * prefix) and `shell=1` (service worker, for offline reloads).
 */
import { type Engine, tumbling } from '@tidemark/engine'
import { claimSource, indexedDbPersistence, openEngine } from '@tidemark/idb'
import { seededRandom } from '@tidemark/seeded-random'
import { beginStormPage } from '@tidemark/storm/page'
import { BroadcastChannelProvider, bindDoc } from '@tidemark/yjs'
import { connectWebsocket } from '@tidemark/yjs/websocket'
import * as Y from 'yjs'
import { hostileCommands } from './hostilePeer.ts'
import { setText, shellReady } from './pageBoot.ts'
import { STORM_LATENESS_MS, STORM_WINDOW_MS } from './stormConfig.ts'

// Before anything slow, so no offline/online event is missed.
const storm = beginStormPage()
const { role, room, seed } = storm.query

async function start(): Promise<void> {
  if (storm.params.get('shell') === '1') await shellReady()
  const claim = await claimSource({ prefix: storm.params.get('prefix') ?? `storm-${role}` })
  const doc = new Y.Doc()
  const engine = await openEngine({
    windows: tumbling(STORM_WINDOW_MS),
    allowedLateness: STORM_LATENESS_MS,
    // Nothing leaves live state during a test: totals are read from results().
    retention: 1e12,
    persistence: indexedDbPersistence({ name: claim.database, claim }),
  })
  bindDoc(engine, doc, { onError: (error) => storm.error(`replication: ${error.message}`) })
  const channel = `tidemark:storm:${room}`
  const tabs = new BroadcastChannelProvider(doc, channel)
  const connection = connectWebsocket(doc, { url: storm.query.server, room, jitter: { baseMs: 250, capMs: 2_000, initialMs: 200, random: seededRandom(seed) } })
  connection.provider.on('status', ({ status }: { status: string }) => storm.syncStatus(status))
  // Chromium's offline emulation leaves open WebSockets alive (playwright#4910), and a real
  // network drop may take minutes to surface: follow the browser's online/offline signal.
  addEventListener('offline', () => connection.provider.disconnect())
  addEventListener('online', () => connection.provider.connect())
  if (!navigator.onLine) connection.provider.disconnect()
  showStatus(engine, claim.source)
  storm.ready({
    engine,
    source: claim.source,
    commands: hostileCommands(doc, claim.source, channel),
    async close() {
      connection.destroy()
      tabs.destroy()
      await engine.close()
    },
  })
}

/** Keeps the page's status lines current, at most every 250 ms. */
function showStatus(engine: Engine, source: string): void {
  let queued = false
  const render = (): void => {
    if (queued) return
    queued = true
    setTimeout(() => {
      queued = false
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
}

start().catch((error: unknown) => setText('status', `failed: ${storm.failed(error)}`))
