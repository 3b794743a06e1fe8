/**
 * A device that lost its doc and comes back reconfigured, through a real relay: session 2 of
 * replica r binds an empty doc under a new configuration (allowed lateness 10 min instead of 0),
 * so it learns of session 1's entries in its room only when the relay's state arrives, after its
 * own step 2 went out. It deletes them then; a dashboard of the new configuration, which saw
 * session 1's meta entry and refused it, never merges them in the meantime. Each session's Yjs
 * client is fixed, so that each side of the conflict on r's meta entry is taken.
 */
import { createEngine, manual, type StreamEvent, type TidemarkEngine, tumbling } from '@tidemark/engine'
import { bindDoc, connectRelay, followRooms, type Relay as RelayClient } from '@tidemark/yjs'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { type Relay, startRelay } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { SECRET, signToken, waitFor } from './support/roomClients.ts'

const T0 = 1_700_000_040_000
const OLD = { windows: tumbling(60_000), watermark: manual(), allowedLateness: 0 }
const NEW = { windows: tumbling(60_000), watermark: manual(), allowedLateness: 600_000 }
const JITTER = { baseMs: 50, capMs: 200 }
const relays: Relay[] = []
const clients: RelayClient[] = []

afterEach(() => {
  for (const client of clients.splice(0)) client.destroy()
})
afterAll(async () => {
  for (const relay of relays) await relay.close()
  removeDataDirs()
})

function readings(count: number, value: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `dr-${i + 1}`, source: 'dr', seq: i + 1, ts: T0 + (i + 1) * 1_000, key: `zone-${(i + 1) % 40}`, value }))
}
const values = (engine: TidemarkEngine) => engine.results().map((r) => [r.start, r.key, r.count, r.sum])
const total = (engine: TidemarkEngine, field: 'count' | 'sum') => engine.results().reduce((sum, r) => sum + r[field], 0)
const inSync = (engine: TidemarkEngine) => engine.syncStatus().state === 'connected' && engine.syncStatus().pendingLocalUpdates === 0

describe('a device that comes back reconfigured on an empty doc', () => {
  it.each([
    ["session 2's meta entry wins the conflict", 1, 2],
    ["session 1's meta entry wins the conflict", 2, 1],
  ])('a dashboard of the new configuration ends with the device, never with session 1 (%s)', async (_, firstClient, secondClient) => {
    const relay = await startRelay({ port: 0, store: { dataDir: freshDataDir() }, auth: { secret: SECRET }, persistence: { writeWindowMs: 50 }, log: () => undefined })
    relays.push(relay)
    const fleet = `fleet-${firstClient}`
    const room = `${fleet}/r`
    const token = () => signToken({ sub: 'r', role: 'device', rooms: [room], replicas: ['r'], sources: ['dr'] })
    const errors: Error[] = []
    // Session 1, the old configuration, synced.
    const first = createEngine({ ...OLD, replicaId: 'r' }) as TidemarkEngine
    const firstDoc = new Y.Doc()
    firstDoc.clientID = firstClient
    bindDoc(first, firstDoc)
    first.ingest(readings(600, 100))
    const c1 = connectRelay({ url: relay.url, token, WebSocket, jitter: JITTER, onError: (e) => errors.push(e) })
    clients.push(c1)
    c1.join(firstDoc, room)
    await waitFor(() => inSync(first), 'session 1 synced')
    // A dashboard of the new configuration follows the room: session 1 is refused there.
    const dashboard = createEngine(NEW) as TidemarkEngine
    const dc = connectRelay({ url: relay.url, token: () => signToken({ sub: 'ops', role: 'dashboard', rooms: [`${fleet}/*`] }), WebSocket, jitter: JITTER })
    clients.push(dc)
    const follower = followRooms(dashboard, dc, { directory: `${fleet}/_directory`, bind: { onError: () => undefined } })
    await waitFor(() => follower.rooms().size === 1 && dashboard.syncStatus().state === 'connected', 'the dashboard follows the room')
    await waitFor(() => dashboard.syncStatus().pendingLocalUpdates === 0 && follower.rooms().size === 1, 'the dashboard in sync')
    expect(total(dashboard, 'count')).toBe(0)
    c1.destroy()
    // Session 2: an empty doc, the new configuration, the same readings with other values.
    const second = createEngine({ ...NEW, replicaId: 'r' }) as TidemarkEngine
    second.ingest(readings(600, 1))
    const secondDoc = new Y.Doc()
    secondDoc.clientID = secondClient
    bindDoc(second, secondDoc, { onError: () => undefined })
    const c2 = connectRelay({ url: relay.url, token, WebSocket, jitter: JITTER, onError: (e) => errors.push(e) })
    clients.push(c2)
    c2.join(secondDoc, room)
    await waitFor(() => inSync(second), 'session 2 synced')
    await waitFor(() => total(dashboard, 'count') === 600, "the dashboard has session 2's windows")
    expect(total(second, 'sum')).toBe(600)
    expect(values(dashboard)).toEqual(values(second))
    expect(second.syncStatus().refusal).toBeNull()
    expect(errors).toEqual([])
    follower.destroy()
  }, 60_000)
})
