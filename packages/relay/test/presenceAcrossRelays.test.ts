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
import * as encoding from 'lib0/encoding'
import { awarenessFrame, updateFrame } from './support/hocuspocusFrames.ts'
import { dashboardToken, groupEntry, metric, openRoom, type RoomClient, relaySocket, replicaLog, SECRET, signToken, waitFor, waitUntil } from './support/roomClients.ts'

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

  /** An awareness update of one client: its presence at `clock`, `state` (null: removed). */
  function presenceOf(client: number, clock: number, state: unknown): Uint8Array {
    const e = encoding.createEncoder()
    encoding.writeVarUint(e, 1)
    encoding.writeVarUint(e, client)
    encoding.writeVarUint(e, clock)
    encoding.writeVarString(e, JSON.stringify(state))
    return encoding.toUint8Array(e)
  }

  /** The clock of `client`'s presence as `viewer` sees it. */
  function clockOf(viewer: RoomClient, client: number): number {
    return viewer.provider.awareness?.meta.get(client)?.clock ?? 0
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

  it("removing a presence shown through another relay does not make its client id anyone's: neither to write under first, nor to show as one's own", async () => {
    const room = `${FLEET}/removed`
    const owner = open(a, await signToken({ sub: 'd9', role: 'device', rooms: [room], replicas: ['d9'], sources: ['d9-temp'] }), undefined, room)
    await waitFor(() => owner.synced(), 'the owner synced on relay A')
    owner.provider.setAwarenessField('name', 'd9')
    const ownerId = owner.doc.clientID
    const attackerToken = await signToken({ sub: 'd1', role: 'device', rooms: [room], replicas: ['d1'], sources: ['d1-temp'] })
    const remover = open(b, attackerToken, undefined, room)
    await waitFor(() => remover.synced() && remover.provider.awareness?.getStates().get(ownerId) !== undefined, "the owner's presence on relay B")
    // The removal an honest client sends for a peer that timed out passes. Right behind it, on the
    // same socket (before the owner's client can show itself again), the id is claimed as the
    // attacker's own presence.
    const clock = clockOf(remover, ownerId)
    const dropped = await metric(b.httpUrl, 'tidemark_relay_presence_dropped_total')
    const socket = sockets.at(-1) as ReturnType<typeof relaySocket>
    socket.send(awarenessFrame(room, presenceOf(ownerId, clock + 1, null)))
    socket.send(awarenessFrame(room, presenceOf(ownerId, clock + 2, { name: 'squatter' })))
    await waitUntil(async () => (await metric(b.httpUrl, 'tidemark_relay_presence_dropped_total')) > dropped, 'the claim dropped')
    // And, on another connection, the removal right before a first write under it.
    const attacker = open(b, attackerToken, undefined, room)
    await waitFor(() => attacker.synced(), 'the attacker synced')
    ;(sockets.at(-1) as ReturnType<typeof relaySocket>).send(awarenessFrame(room, presenceOf(ownerId, clockOf(attacker, ownerId) + 1, null)))
    await squat(attacker, room, ownerId)
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
