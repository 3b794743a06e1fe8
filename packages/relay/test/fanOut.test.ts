/**
 * Fan-out: an update goes to every other connection of its room, never back to the one it came
 * from (a device would otherwise download all it uploads).
 */
import * as decoding from 'lib0/decoding'
import { afterAll, describe, expect, it } from 'vitest'
import { type Relay, startRelay } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { dashboardToken, deviceToken, groupEntry, metric, openRoom, type RoomClient, relaySocket, replicaLog, SECRET, waitFor } from './support/roomClients.ts'

const relays: Relay[] = []
const sockets: ReturnType<typeof relaySocket>[] = []
const clients: RoomClient[] = []

afterAll(async () => {
  for (const client of clients) client.destroy()
  for (const socket of sockets) socket.destroy()
  await Promise.all(relays.map((relay) => relay.close()))
  removeDataDirs()
})

/** Sync messages of type update (0, 2) that reached `client` for its room. */
function countUpdates(client: RoomClient): { count(): number } {
  let updates = 0
  client.provider.on('message', ({ event }: { event: MessageEvent }) => {
    const decoder = decoding.createDecoder(new Uint8Array(event.data as ArrayBuffer))
    decoding.readVarString(decoder)
    if (decoding.readVarUint(decoder) === 0 && decoding.readVarUint(decoder) === 2) updates++
  })
  return { count: () => updates }
}

describe('update fan-out', () => {
  it('sends a device tab’s updates to the room’s other tab and dashboard, not back to it', async () => {
    const relay = await startRelay({ port: 0, store: { dataDir: freshDataDir() }, auth: { secret: SECRET }, persistence: { writeWindowMs: 20 }, log: () => undefined })
    relays.push(relay)
    const open = async (token: string): Promise<RoomClient> => {
      const socket = relaySocket(relay.url)
      sockets.push(socket)
      const client = openRoom(socket, 'fleet-f/d1', token)
      clients.push(client)
      return client
    }
    const tabA = await open(await deviceToken('fleet-f', 'd1'))
    const tabB = await open(await deviceToken('fleet-f', 'd1'))
    const dashboard = await open(await dashboardToken('fleet-f'))
    await waitFor(() => tabA.synced() && tabB.synced() && dashboard.synced(), 'three connections synced')
    const [toA, toB, toDashboard] = [tabA, tabB, dashboard].map(countUpdates) as [{ count(): number }, { count(): number }, { count(): number }]
    const outBefore = await metric(relay.httpUrl, 'tidemark_relay_updates_out_total')

    for (let i = 0; i < 5; i++) replicaLog(tabA.doc, 'd1').push([groupEntry('d1-temp', i * 60_000, i)])
    await waitFor(() => replicaLog(tabB.doc, 'd1').length === 5 && replicaLog(dashboard.doc, 'd1').length === 5, 'the other tab and the dashboard got the five entries')
    expect([toB.count(), toDashboard.count()]).toEqual([5, 5])
    // The relay acknowledged each one to tab A (its sync status) but sent none of them back.
    expect(toA.count()).toBe(0)
    expect(await metric(relay.httpUrl, 'tidemark_relay_updates_out_total')).toBe(outBefore + 10)
  })
})
