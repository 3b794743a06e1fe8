/**
 * Authentication and per-source write authorization against a relay in this process (PGlite):
 * each refusal reaches the client with its reason and is counted in /metrics; refused data
 * reaches neither a dashboard nor the store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { type Relay, startRelay } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import {
  clockEntry,
  dashboardToken,
  deviceToken,
  groupEntry,
  metric,
  openRoom,
  type RoomClient,
  relaySocket,
  replicaLog,
  SECRET,
  signToken,
  waitFor,
} from './support/roomClients.ts'

const FLEET = 'fleet-a'
const ROOM = `${FLEET}/d1`
let dataDir: string
let relay: Relay
const sockets: ReturnType<typeof relaySocket>[] = []
const clients: RoomClient[] = []

function open(room: string, token: string, doc?: Y.Doc): RoomClient {
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const client = openRoom(socket, room, token, doc)
  clients.push(client)
  return client
}

function closeClients(): void {
  for (const client of clients.splice(0)) client.destroy()
  for (const socket of sockets.splice(0)) socket.destroy()
}

async function start(): Promise<Relay> {
  return startRelay({ port: 0, store: { dataDir }, auth: { secret: SECRET }, persistence: { writeWindowMs: 20 }, log: () => undefined })
}

/** Everything a doc holds, comparable: the meta map, each replica log, and the names of any other roots. */
function contents(doc: Y.Doc): unknown {
  const out: Record<string, unknown> = {}
  for (const name of [...doc.share.keys()].sort()) {
    if (name === 'tidemark:meta') out[name] = doc.getMap(name).toJSON()
    else if (name.startsWith('tidemark:replica:')) out[name] = doc.getArray(name).toJSON()
    else out[name] = 'another root'
  }
  return JSON.parse(JSON.stringify(out, (_key, value: unknown) => (value instanceof Uint8Array ? `bytes(${value.byteLength})` : value)))
}

function sawAttack(doc: Y.Doc): boolean {
  const text = JSON.stringify(contents(doc))
  return text.includes('d2') || text.includes('999') || text.includes('another root') || doc.share.has('tidemark:replica:dash')
}

beforeAll(async () => {
  dataDir = freshDataDir()
  relay = await start()
})

afterAll(async () => {
  closeClients()
  await relay?.close()
  removeDataDirs()
})

describe('opening a room', () => {
  it.each([
    ['no token', () => Promise.resolve(''), ROOM, 'tidemark:no-token', 'no-token'],
    ['a bad signature', () => signToken({ sub: 'x', role: 'dashboard', rooms: [ROOM] }, { secret: new TextEncoder().encode('another-secret-another-secret-another-secret') }), ROOM, 'tidemark:bad-signature', 'bad-signature'],
    ['an expired token', () => signToken({ sub: 'x', role: 'dashboard', rooms: [ROOM] }, { expiresAt: Math.floor(Date.now() / 1000) - 60 }), ROOM, 'tidemark:token-expired', 'token-expired'],
    ['a room the token does not list', () => deviceToken(FLEET, 'd1'), `${FLEET}/d9`, `tidemark:room-not-allowed ${FLEET}/d9`, 'room-not-allowed'],
    ['a reserved room name', () => dashboardToken(FLEET), `${FLEET}/_secret`, 'tidemark:bad-room segment "_secret" is reserved', 'bad-room'],
    ['a token without a role', () => signToken({ sub: 'x', rooms: [ROOM] }), ROOM, 'tidemark:bad-claims role must be "device" or "dashboard"', 'bad-claims'],
  ] as const)('with %s is refused with its reason', async (_, token, room, reason, kind) => {
    const before = await metric(relay.httpUrl, `tidemark_relay_refusals_total{reason="${kind}"}`)
    const client = open(room, await token())
    await waitFor(() => client.denied.length > 0, 'permission denied')
    expect(client.denied).toEqual([reason])
    expect(client.synced()).toBe(false)
    expect(await metric(relay.httpUrl, `tidemark_relay_refusals_total{reason="${kind}"}`)).toBe(before + 1)
  })

  it("with an nbf a few seconds ahead (its issuer's clock ahead of the relay's) opens; one past the allowed skew is refused, and exp gets no allowance", async () => {
    const now = Math.floor(Date.now() / 1000)
    const ahead = open(ROOM, await signToken({ sub: 'x', role: 'dashboard', rooms: [ROOM], nbf: now + 5 }))
    const future = open(ROOM, await signToken({ sub: 'x', role: 'dashboard', rooms: [ROOM], nbf: now + 3600 }))
    const late = open(ROOM, await signToken({ sub: 'x', role: 'dashboard', rooms: [ROOM] }, { expiresAt: now - 5 }))
    await waitFor(() => (ahead.synced() || ahead.denied.length > 0) && future.denied.length > 0 && late.denied.length > 0, 'all three answered')
    expect(ahead.denied).toEqual([])
    expect(future.denied).toEqual(['tidemark:bad-token "nbf" claim timestamp check failed'])
    expect(late.denied).toEqual(['tidemark:token-expired'])
  })
})

describe('writing', () => {
  let writer: RoomClient
  let dashboard: RoomClient
  let marker = 0

  /** The writer appends a marker; once the dashboard has it, anything sent before it has been delivered or refused. */
  async function barrier(): Promise<void> {
    marker++
    replicaLog(writer.doc, 'd1').push([groupEntry('d1-temp', marker * 60_000)])
    const expected = replicaLog(writer.doc, 'd1').length
    await waitFor(() => replicaLog(dashboard.doc, 'd1').length === expected, `marker ${marker} on the dashboard`)
  }

  beforeAll(async () => {
    writer = open(ROOM, await deviceToken(FLEET, 'd1'))
    await waitFor(() => writer.synced(), 'the device synced')
    writer.doc.transact(() => {
      writer.doc.getMap('tidemark:meta').set('d1', [2, 'cfg'])
      replicaLog(writer.doc, 'd1').push([groupEntry('d1-temp', 0, 1), clockEntry('d1-temp', 'd1', 1)])
    })
    dashboard = open(ROOM, await dashboardToken(FLEET))
    await waitFor(() => replicaLog(dashboard.doc, 'd1').length === 2, "the dashboard received the device's entries")
  })

  it("a device's own entries reach a dashboard, and the fleet's directory lists its room", async () => {
    const directory = open(`${FLEET}/_directory`, await dashboardToken(FLEET))
    await waitFor(() => directory.doc.getMap('rooms').has(ROOM), 'the directory lists the room')
    const [firstSeen] = directory.doc.getMap('rooms').get(ROOM) as [number]
    expect(firstSeen).toBeGreaterThan(Date.now() - 60_000)
    expect(contents(dashboard.doc)).toEqual(contents(writer.doc))
  })

  it.each([
    ['a dashboard writing', 'dashboard', (doc: Y.Doc) => replicaLog(doc, 'dash').push([groupEntry('d1-temp', 999_000)]), 'read-only'],
    ["a device writing another device's source", 'd1', (doc: Y.Doc) => replicaLog(doc, 'd1').push([groupEntry('d2-temp', 999_000)]), 'foreign-source d2-temp'],
    ["a device writing another replica's log", 'd1', (doc: Y.Doc) => replicaLog(doc, 'd2').push([groupEntry('d1-temp', 999_000)]), 'foreign-replica d2'],
    ["a device writing another replica's meta entry", 'd1', (doc: Y.Doc): void => void doc.getMap('tidemark:meta').set('d2', [2, 'cfg']), 'foreign-meta d2'],
    ['a device writing a clock as another replica', 'd1', (doc: Y.Doc) => replicaLog(doc, 'd1').push([clockEntry('d1-temp', 'd2', 999)]), 'foreign-replica d2'],
    ['a device writing a malformed entry', 'd1', (doc: Y.Doc) => replicaLog(doc, 'd1').push([['g', 'w', 999, 'd1-temp', '["a","b"]', new Uint8Array(48), new Uint8Array(0)]]), 'malformed-entry keys must be a JSON array of 1 strings: "[\\"a\\",\\"b\\"]"'],
    ['a device writing an entry whose aggregate states overrun their column', 'd1', (doc: Y.Doc) => replicaLog(doc, 'd1').push([['g', 'w', 999, 'd1-temp', '["a"]', new Uint8Array(48), new Uint8Array([1, 9, 0x51])]]), 'malformed-entry aggregate state 0 of cell 0 overruns the column'],
    ['a device writing a root outside the schema', 'd1', (doc: Y.Doc): void => void doc.getMap('notes').set('d2', 999), 'unknown-root notes'],
    ['a device writing a nested type', 'd1', (doc: Y.Doc) => replicaLog(doc, 'd1').push([new Y.Map() as never]), 'nested-type'],
  ] as const)('%s is refused with its reason and reaches neither a dashboard nor the store', async (_, who, write, reason) => {
    const kind = reason.split(' ')[0] as string
    const before = await metric(relay.httpUrl, `tidemark_relay_refusals_total{reason="${kind}"}`)
    const attacker = open(ROOM, who === 'dashboard' ? await dashboardToken(FLEET) : await deviceToken(FLEET, 'd1'))
    await waitFor(() => attacker.synced(), 'the attacker synced')
    write(attacker.doc)
    await waitFor(() => attacker.closed.length > 0, 'the refusal')
    expect(attacker.stateless.map((payload) => JSON.parse(payload))).toEqual([{ tidemark: 'refused', room: ROOM, reason }])
    expect(attacker.closed).toEqual([`tidemark:refused ${reason}`])
    expect(await metric(relay.httpUrl, `tidemark_relay_refusals_total{reason="${kind}"}`)).toBe(before + 1)
    await barrier()
    expect(sawAttack(dashboard.doc)).toBe(false)
  })

  it('refused data is not in the store: a restarted relay serves only what was accepted', async () => {
    await barrier()
    const accepted = contents(writer.doc)
    closeClients()
    await relay.close()
    relay = await start()
    const reader = open(ROOM, await dashboardToken(FLEET))
    await waitFor(() => reader.synced(), 'the reader synced')
    expect(contents(reader.doc)).toEqual(accepted)
    expect(sawAttack(reader.doc)).toBe(false)
  })
})
