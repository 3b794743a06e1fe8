/**
 * Presence across relays: which writer holds which client id's presence crosses Redis ahead of
 * the presence. A device on one relay cannot write first under a client id that a device on
 * another relay shows as its presence; a device that moves to another relay takes its presence
 * along. Two relays in this process, sharing a redis-server started here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { type RedisServer, startRedisServer } from '../scripts/redisServer.ts'
import { type Relay, startRelay } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { updateFrame } from './support/hocuspocusFrames.ts'
import { dashboardToken, groupEntry, metric, openRoom, type RoomClient, relaySocket, replicaLog, SECRET, signToken, waitFor } from './support/roomClients.ts'

const FLEET = 'fleet-p'
const ROOM = `${FLEET}/shared`
/** A room relay B loads only after a device on relay A shows its presence there. */
const LATE_ROOM = `${FLEET}/late`

describe('presence across relays', () => {
  let redis: RedisServer
  let a: Relay
  let b: Relay
  const sockets: ReturnType<typeof relaySocket>[] = []
  const clients: RoomClient[] = []

  function open(relay: Relay, token: string, doc?: Y.Doc, room = ROOM): RoomClient {
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const client = openRoom(socket, room, token, doc)
    clients.push(client)
    return client
  }

  /** A device token for `device`, writing its own replica and source in the room. */
  function device(name: string): Promise<string> {
    return signToken({ sub: name, role: 'device', rooms: [ROOM, LATE_ROOM], replicas: [name], sources: [`${name}-temp`] })
  }

  /** The attacker (the device d1, on the last socket opened) writes first under `ownerId` in its own log: refused. */
  async function squat(attacker: RoomClient, room: string, ownerId: number): Promise<void> {
    const doc = new Y.Doc()
    doc.clientID = ownerId
    replicaLog(doc, 'd1').push([groupEntry('d1-temp', 0)])
    ;(sockets.at(-1) as ReturnType<typeof relaySocket>).send(updateFrame(room, Y.encodeStateAsUpdate(doc)))
    await waitFor(() => attacker.closed.length > 0, 'the refusal')
    expect(attacker.closed[0]).toContain(`client-id-squatting client ${ownerId} is another connection's presence`)
  }

  beforeAll(async () => {
    redis = await startRedisServer()
    const relay = (): Promise<Relay> =>
      startRelay({ port: 0, store: { dataDir: freshDataDir() }, auth: { secret: SECRET }, redisUrl: redis.url, persistence: { writeWindowMs: 20 }, log: () => undefined })
    a = await relay()
    b = await relay()
  })

  afterAll(async () => {
    for (const client of clients) client.destroy()
    for (const socket of sockets) socket.destroy()
    await a?.close()
    await b?.close()
    await redis?.stop()
    removeDataDirs()
  })

  it("a device on relay B cannot write first under a client id a device on relay A shows as its presence; that device then writes under it", async () => {
    const dashboard = open(b, await dashboardToken(FLEET))
    const owner = open(a, await device('d9'))
    await waitFor(() => owner.synced() && dashboard.synced(), 'both synced')
    owner.provider.setAwarenessField('name', 'd9')
    const ownerId = owner.doc.clientID
    // The attacker, on relay B, learns the id from the presence B relays from A.
    const attacker = open(b, await device('d1'))
    await waitFor(() => attacker.synced() && attacker.provider.awareness?.getStates().get(ownerId) !== undefined, "the owner's presence on relay B")
    await squat(attacker, ROOM, ownerId)
    // The owner's own first write under its id reaches the dashboard on B.
    replicaLog(owner.doc, 'd9').push([groupEntry('d9-temp', 0)])
    await waitFor(() => replicaLog(dashboard.doc, 'd9').length === 1, "the owner's entry on relay B")
    expect(replicaLog(dashboard.doc, 'd1').length).toBe(0)
    expect(owner.closed).toEqual([])
  })

  it('a relay that loads the room after the presence was shown asks the other relays whose it is, before the presence arrives', async () => {
    const owner = open(a, await device('d9'), undefined, LATE_ROOM)
    await waitFor(() => owner.synced(), 'the owner synced on relay A')
    owner.provider.setAwarenessField('name', 'd9')
    const ownerId = owner.doc.clientID
    // Relay B loads the room for the attacker, and learns the presence from relay A then.
    const attacker = open(b, await device('d1'), undefined, LATE_ROOM)
    await waitFor(() => attacker.synced() && attacker.provider.awareness?.getStates().get(ownerId) !== undefined, "the owner's presence on relay B")
    await squat(attacker, LATE_ROOM, ownerId)
  })

  it('a device that reconnects through the other relay before the first noticed it gone takes its presence along, and writes first there', async () => {
    const onB = open(b, await dashboardToken(FLEET))
    const doc = new Y.Doc()
    const first = open(a, await device('d7'), doc)
    await waitFor(() => first.synced() && onB.synced(), 'both synced')
    first.provider.setAwarenessField('name', 'd7')
    await waitFor(() => onB.provider.awareness?.getStates().get(doc.clientID) !== undefined, 'its presence on relay B')
    const droppedBefore = await metric(b.httpUrl, 'tidemark_relay_presence_dropped_total')
    // Its connection to A still open as far as A knows, it reconnects through B with the same doc.
    const moved = open(b, await device('d7'), doc)
    await waitFor(() => moved.synced(), 'synced on relay B')
    moved.provider.setAwarenessField('name', 'd7 through B')
    await waitFor(() => onB.provider.awareness?.getStates().get(doc.clientID)?.name === 'd7 through B', 'its presence through relay B')
    expect(await metric(b.httpUrl, 'tidemark_relay_presence_dropped_total')).toBe(droppedBefore)
    replicaLog(doc, 'd7').push([groupEntry('d7-temp', 0)])
    await waitFor(() => replicaLog(onB.doc, 'd7').length === 1, 'its first write on relay B')
    expect(moved.closed).toEqual([])
  })
})
