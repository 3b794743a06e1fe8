/**
 * A room that unloads while this relay holds another relay's changes of it (they wait for that
 * relay to say it stored them), and loads again before they are settled, opens with them: they
 * are this relay's accepted updates not stored yet, as its own queued updates are. Otherwise a
 * room whose writer's relay died is served without what that relay acknowledged, until the
 * room loads again. Hocuspocus and the persistence in this process, on PGlite; the relayed
 * change is held as the Redis scale-out holds it, from the room's update event.
 */
import { Hocuspocus } from '@hocuspocus/server'
import { afterAll, expect, it } from 'vitest'
import * as Y from 'yjs'
import { RelayMetrics } from '../src/metrics/relayMetrics.ts'
import { IdleRooms } from '../src/rooms/idleRooms.ts'
import { RoomSizes } from '../src/rooms/roomSizes.ts'
import { openPglite } from '../src/store/pgliteClient.ts'
import { RelayedUpdates } from '../src/store/relayedUpdates.ts'
import { RoomPersistence } from '../src/store/roomPersistence.ts'
import { RoomStore } from '../src/store/roomStore.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { ManualTimers } from './support/guardedSockets.ts'
import { groupEntry, replicaLog, waitFor } from './support/roomClients.ts'

const cleanups: (() => Promise<void>)[] = []

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  removeDataDirs()
})

const log = (): void => undefined
const ROOM = 'fleet-h/d1'
const OTHER_RELAY = 'tidemark-relay-41-x1'
/** The origin the scale-out applies other relays' changes under. */
const REMOTE = 'remote'

it('a room loaded again while another relay’s change of it is held here opens with that change', async () => {
  const metrics = new RelayMetrics()
  const store = await RoomStore.open(await openPglite(freshDataDir()), { writeWindowMs: 20, compactAfterRows: 256, compactAfterBytes: 16 << 10 }, metrics, log)
  cleanups.push(() => store.close())
  // Hand-run: the hold does not end within the test.
  const timers = new ManualTimers()
  const relayed = new RelayedUpdates(store, { holdMs: 5_000, now: () => timers.now, timers, metrics })
  // Rooms unload as soon as nobody is connected.
  const idle = new IdleRooms(0, Date.now, { setTimeout: (run, ms) => setTimeout(run, ms), clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout) }, log)
  const persistence = new RoomPersistence({ store, sizes: new RoomSizes(1 << 20), idle, metrics, log, relayed })
  const hocuspocus = new Hocuspocus({ quiet: true, extensions: [persistence] })

  const first = await hocuspocus.openDirectConnection(ROOM)
  const document = hocuspocus.documents.get(ROOM) as Y.Doc
  document.on('update', (update: Uint8Array, origin: unknown) => {
    if (origin === REMOTE) relayed.hold(ROOM, update, OTHER_RELAY)
  })
  const device = new Y.Doc()
  replicaLog(device, 'd1').push([groupEntry('d1-temp', 0)])
  Y.applyUpdate(document, Y.encodeStateAsUpdate(device), REMOTE)
  expect(relayed.bytes).toBeGreaterThan(0)
  await first.disconnect()
  await waitFor(() => hocuspocus.documents.size === 0, 'the room unloaded')

  const again = await hocuspocus.openDirectConnection(ROOM)
  const reloaded = hocuspocus.documents.get(ROOM) as Y.Doc
  expect(replicaLog(reloaded, 'd1').length).toBe(1)
  // Still held: written once, by the hold, should the other relay not say it stored it.
  await again.disconnect()
  await waitFor(() => hocuspocus.documents.size === 0, 'the room unloaded again')
  await store.flush()
  expect(metrics.updatesStored).toBe(0)
  timers.advance(5_000)
  await store.flush()
  expect(metrics.updatesStored).toBe(1)
  expect(metrics.relayedWritten).toBe(1)
})
