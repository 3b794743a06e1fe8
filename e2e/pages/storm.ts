/**
 * The storm page: a device or a dashboard of one fleet, as `@tidemark/storm`'s driver opens
 * it, syncing through a Tidemark relay with the token the test put in its URL. A device claims
 * the source named in its URL (a Web Lock), opens an engine over IndexedDB with that source as
 * its replica id and writes its own room `<room>/<source>`; a dashboard follows the relay's
 * directory `<room>/_directory` read-only. Both reconnect with seeded jitter, follow the
 * browser's offline/online signal, and report every refusal of the relay.
 *
 * Query: the storm's `role`, `server`, `room`, `seed`; the page's own `token` (its relay token),
 * `source` (a device's), `relays` (relay URLs to use instead of `server`, comma-separated, tried
 * in turn), `prefix` (a dashboard's source prefix) and `shell=1` (service worker, for offline
 * reloads).
 */
import { type Engine, tumbling } from '@tidemark/engine'
import { claimSource, indexedDbPersistence, openEngine } from '@tidemark/idb'
import { seededRandom } from '@tidemark/seeded-random'
import { beginStormPage } from '@tidemark/storm/page'
import { connectRelay, followRooms, type Relay, syncStatusTracker } from '@tidemark/yjs'
import type * as Y from 'yjs'
import { DeviceRoom } from './deviceRoom.ts'
import { dashboardHostileCommands, deviceHostileCommands } from './hostilePeer.ts'
import { claimNamedSource } from './namedSource.ts'
import { setText, shellReady } from './pageBoot.ts'
import { STORM_LATENESS_MS, STORM_WINDOW_MS } from './stormConfig.ts'

// Before anything slow, so no offline/online event is missed.
const storm = beginStormPage()
const { role, room, seed } = storm.query
/** Every refusal the relay gave this page, oldest first (also in its status changes). */
const refusals: string[] = []
/** Every key this page's engine ever showed a window of. */
const keysSeen = new Set<string>()

function refused(reason: string): void {
  refusals.push(reason)
  storm.syncStatus(`refused: ${reason}`)
  setText('refusals', refusals.join('; '))
}

async function start(): Promise<void> {
  if (storm.params.get('shell') === '1') await shellReady()
  const claim = role === 'device' ? await claimNamedSource('storm-device', storm.params.get('source')) : await claimSource({ prefix: storm.params.get('prefix') ?? 'storm-dashboard' })
  const engine = await openEngine({
    windows: tumbling(STORM_WINDOW_MS),
    allowedLateness: STORM_LATENESS_MS,
    // Nothing leaves live state during a test: totals are read from results().
    retention: 1e12,
    persistence: indexedDbPersistence({ name: claim.database, claim }),
    // A device's token names its replica: the source it writes.
    ...(role === 'device' ? { replicaId: claim.source } : {}),
  })
  engine.subscribe((changes) => {
    for (const change of changes) keysSeen.add(change.result.key)
  })
  const relays = storm.params.get('relays')?.split(',').filter((url) => url !== '') ?? [storm.query.server]
  const connect = (): Relay =>
    connectRelay({
      url: relays,
      token: storm.params.get('token') ?? '',
      jitter: { baseMs: 250, capMs: 2_000, initialMs: 200, random: seededRandom(seed) },
      onError: (error) => storm.error(`relay: ${error.message}`),
    })
  const relay = connect()
  const onError = (message: string): void => storm.error(message)
  let commands: Parameters<typeof storm.ready>[0]['commands']
  let leave: () => void
  if (role === 'device') {
    const deviceRoom = new DeviceRoom(engine, relay, `${room}/${claim.source}`, { onError, onRefused: refused })
    commands = deviceHostileCommands(() => deviceRoom.doc, claim.source)
    leave = () => deviceRoom.destroy()
  } else {
    const follower = followRooms(engine, relay, { directory: `${room}/_directory`, bind: { onError: (error) => onError(`replication: ${error.message}`) } })
    const watch = (doc: Y.Doc): void => {
      let reported: string | null = null
      syncStatusTracker(doc).subscribe(({ refusal }) => {
        if (refusal === null || refusal === reported) return
        reported = refusal
        refused(refusal)
      })
    }
    commands = dashboardHostileCommands(connect, watch)
    leave = () => follower.destroy()
    // The directory's refusal (a token the relay does not take) is the engine's.
    reportEngineRefusals(engine)
  }
  // Chromium's offline emulation leaves open WebSockets alive (playwright#4910), and a real
  // network drop may take minutes to surface: follow the browser's online/offline signal.
  addEventListener('offline', () => relay.disconnect())
  addEventListener('online', () => relay.connect())
  if (!navigator.onLine) relay.disconnect()
  showStatus(engine, claim.source)
  storm.ready({
    engine,
    source: claim.source,
    commands: { ...commands, refusals: () => [...refusals], keysSeen: () => [...keysSeen].sort() },
    async close() {
      leave()
      relay.destroy()
      await engine.close()
    },
  })
}

/** Reports the engine's refusal (its followed rooms' and directory's) when it changes. */
function reportEngineRefusals(engine: Engine): void {
  let reported: string | null = null
  const check = (): void => {
    const { refusal } = engine.syncStatus()
    if (refusal === null || refusal === reported) return
    reported = refusal
    refused(refusal)
  }
  engine.subscribe(check)
  check()
}

/** Keeps the page's status lines current, at most every 250 ms; sync status changes go to the driver as they happen. */
function showStatus(engine: Engine, source: string): void {
  let queued = false
  let lastState: string | null = null
  const render = (): void => {
    const { state } = engine.syncStatus()
    if (state !== lastState) {
      lastState = state
      storm.syncStatus(state)
    }
    if (queued) return
    queued = true
    setTimeout(() => {
      queued = false
      const stats = engine.stats()
      const sync = engine.syncStatus()
      setText('online', navigator.onLine ? 'online' : 'offline')
      setText('sync', sync.refusal === null ? sync.state : `${sync.state}, refused: ${sync.refusal}`)
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
