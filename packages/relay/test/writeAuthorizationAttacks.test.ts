/**
 * Hand-made Yjs updates against the relay's write authorization: updates no Yjs encoder writes
 * (one client in several struct sections, overlapping delete ranges, …) that Yjs still applies,
 * sent by a device allowed to write only its own replica and source. Each must be refused (or
 * change nothing it may not), reach no dashboard, and cost the relay time in proportion to its
 * size.
 */
import * as encoding from 'lib0/encoding'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import * as Y from 'yjs'
import { authorizeUpdate, type Relay, startRelay, type WriteGrant } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { authFrame, syncFrame, updateFrame } from './support/hocuspocusFrames.ts'
import { clockEntry, dashboardToken, deviceToken, groupEntry, metric, openRoom, type RoomClient, relaySocket, replicaLog, SECRET, signToken, waitFor, waitUntil } from './support/roomClients.ts'

/** The size of every update the relay's write authorization checked, in order (the relay runs in this process). */
const checkedBytes = vi.hoisted((): number[] => [])
vi.mock('../src/authorize/authorizeUpdate.ts', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../src/authorize/authorizeUpdate.ts')>()
  return {
    ...actual,
    authorizeUpdate: (...args: Parameters<typeof actual.authorizeUpdate>) => {
      checkedBytes.push(args[1].byteLength)
      return actual.authorizeUpdate(...args)
    },
  }
})

const A: WriteGrant = { replicas: new Set(['A']), sources: new Set(['s-A']) }

/** One struct of a hand-written v1 update. */
type Struct =
  | { readonly gc: number }
  | { readonly skip: number }
  | {
      readonly origin?: readonly [number, number]
      readonly right?: readonly [number, number]
      /** Root name, written only without origins. */
      readonly parent?: string
      /** Or the parent as the id of the item holding it. */
      readonly parentId?: readonly [number, number]
      readonly key?: string
      /** ContentAny values; without them, ContentDeleted of `deleted` (default 1). */
      readonly any?: readonly unknown[]
      readonly deleted?: number
    }

interface Section {
  readonly client: number
  readonly clock: number
  readonly structs: readonly Struct[]
}

/** A Yjs v1 update, written field by field, sections and delete ranges as given (no sorting, no merging). */
function v1Update(sections: readonly Section[], deletes: readonly { readonly client: number; readonly ranges: readonly (readonly [number, number])[] }[] = []): Uint8Array {
  const e = encoding.createEncoder()
  encoding.writeVarUint(e, sections.length)
  for (const { client, clock, structs } of sections) {
    encoding.writeVarUint(e, structs.length)
    encoding.writeVarUint(e, client)
    encoding.writeVarUint(e, clock)
    for (const struct of structs) {
      if ('gc' in struct) {
        encoding.writeUint8(e, 0)
        encoding.writeVarUint(e, struct.gc)
        continue
      }
      if ('skip' in struct) {
        encoding.writeUint8(e, 10)
        encoding.writeVarUint(e, struct.skip)
        continue
      }
      const rooted = struct.origin === undefined && struct.right === undefined
      let info = struct.any === undefined ? 1 : 8
      if (struct.origin !== undefined) info |= 0x80
      if (struct.right !== undefined) info |= 0x40
      if (rooted && struct.key !== undefined) info |= 0x20
      encoding.writeUint8(e, info)
      for (const id of [struct.origin, struct.right]) {
        if (id === undefined) continue
        encoding.writeVarUint(e, id[0])
        encoding.writeVarUint(e, id[1])
      }
      if (rooted && struct.parentId !== undefined) {
        encoding.writeVarUint(e, 0)
        encoding.writeVarUint(e, struct.parentId[0])
        encoding.writeVarUint(e, struct.parentId[1])
      } else if (rooted) {
        encoding.writeVarUint(e, 1)
        encoding.writeVarString(e, struct.parent ?? '')
      }
      if (rooted && struct.key !== undefined) encoding.writeVarString(e, struct.key)
      if (struct.any === undefined) encoding.writeVarUint(e, struct.deleted ?? 1)
      else {
        encoding.writeVarUint(e, struct.any.length)
        for (const value of struct.any) encoding.writeAny(e, value as never)
      }
    }
  }
  encoding.writeVarUint(e, deletes.length)
  for (const { client, ranges } of deletes) {
    encoding.writeVarUint(e, client)
    encoding.writeVarUint(e, ranges.length)
    for (const [clock, len] of ranges) {
      encoding.writeVarUint(e, clock)
      encoding.writeVarUint(e, len)
    }
  }
  return encoding.toUint8Array(e)
}



function reasonOf(verdict: ReturnType<typeof authorizeUpdate>): string {
  if (verdict.ok) return 'accepted'
  return verdict.missing ? 'missing' : verdict.refusal.text
}

/** A client id no test doc uses. */
const X = 4_242_424

describe('authorizeUpdate against hand-made updates', () => {
  it('refuses a client written in several struct sections (Yjs integrates the last, the check saw a GC of an earlier one)', () => {
    const server = new Y.Doc()
    // Sections 1 and 2: a GC at X:0. Section 3, the one Yjs integrates: an entry of A's source in
    // A's log at X:0, then at X:1 (origin X:0, so in A's log too) B's source and a clock naming B.
    const update = v1Update([
      { client: X, clock: 0, structs: [{ gc: 1 }] },
      { client: X, clock: 0, structs: [{ gc: 1 }] },
      { client: X, clock: 0, structs: [{ parent: 'tidemark:replica:A', any: [groupEntry('s-A', 0)] }, { origin: [X, 0], any: [groupEntry('s-B', 0), clockEntry('s-B', 'B', 5)] }] },
    ])
    expect(reasonOf(authorizeUpdate(server, update, A))).toBe('malformed-update 3 struct sections for 1 clients')
    // What Yjs would have done with it.
    Y.applyUpdate(server, update)
    expect(replicaLog(server, 'A').toJSON().map((entry) => entry[1] === 'tumbling:60000' ? entry[3] : entry[1])).toEqual(['s-A', 's-B', 's-B'])
  })

  it("refuses a first write under a client id that is another live connection's presence (the owner's writes would then read as applied)", () => {
    const server = twoReplicas()
    // X announced its presence through another connection and has written nothing yet: A, who
    // learned X from that presence, writes first under it, a deleted item of a million clocks in A's own log.
    const squat = v1Update([{ client: X, clock: 0, structs: [{ parent: 'tidemark:replica:A', deleted: 1_000_000 }] }])
    const presentElsewhere = (client: number): boolean => client === X
    expect(reasonOf(authorizeUpdate(server, squat, A, presentElsewhere))).toBe(`client-id-squatting client ${X} is another connection's presence`)
    // What it would have done: the owner's first writes under X lie inside the million clocks
    // already applied, so Yjs takes them as known and drops them.
    Y.applyUpdate(server, squat)
    const owner = new Y.Doc()
    owner.clientID = X
    owner.transact(() => replicaLog(owner, 'B').push([groupEntry('s-B', 120_000)]))
    const B: WriteGrant = { replicas: new Set(['B']), sources: new Set(['s-B']) }
    const write = Y.encodeStateAsUpdate(owner)
    expect(authorizeUpdate(server, write, B)).toMatchObject({ ok: true, inserts: 0 })
    Y.applyUpdate(server, write)
    expect(replicaLog(server, 'B').length).toBe(2)
    // The owner itself writes under its id, its own presence or not.
    expect(authorizeUpdate(twoReplicas(), write, B, () => false)).toMatchObject({ ok: true, inserts: 1 })
  })

  it('refuses overlapping delete ranges, in time proportional to the update', () => {
    // 3,000 GC structs and 3,000 delete ranges each over all of them: 9 million struct visits if
    // each range were walked. Refused at the second range, after walking the first one only.
    const n = 3000
    const update = v1Update([{ client: X, clock: 0, structs: Array.from({ length: n }, () => ({ gc: 1 })) }], [{ client: X, ranges: Array.from({ length: n }, () => [0, n] as const) }])
    expect(reasonOf(authorizeUpdate(new Y.Doc(), update, A))).toBe(`malformed-update delete ranges of client ${X} overlap or are out of order at 0`)
  })
})

/** A server doc where A and B each wrote their meta entry and two log entries (client ids 1 and 2). */
function twoReplicas(): Y.Doc {
  const server = new Y.Doc()
  for (const [client, replica] of [
    [1, 'A'],
    [2, 'B'],
  ] as const) {
    const doc = new Y.Doc()
    doc.clientID = client
    doc.transact(() => {
      doc.getMap('tidemark:meta').set(replica, [3, 'cfg'])
      replicaLog(doc, replica).push([groupEntry(`s-${replica}`, 0), groupEntry(`s-${replica}`, 60_000)])
    })
    Y.applyUpdate(server, Y.encodeStateAsUpdate(doc))
  }
  return server
}

describe('authorizeUpdate holds against', () => {
  const entry = groupEntry('s-A', 120_000)
  it.each([
    // An item whose parent is given by the id of a root-level item (B's log entry), not a root name.
    ['a parent given by an item id', [{ client: X, clock: 0, structs: [{ parentId: [2, 1] as const, any: [entry] }] }], 'nested-type'],
    // Only a right origin, in B's log: Yjs takes the parent of the right item.
    ["a right origin in another replica's log", [{ client: X, clock: 0, structs: [{ right: [2, 1] as const, any: [entry] }] }], 'foreign-replica B'],
    // Origin in B's log, right origin in A's: Yjs takes the left item's parent.
    ["an origin in another replica's log and a right origin in its own", [{ client: X, clock: 0, structs: [{ origin: [2, 1] as const, right: [1, 1] as const, any: [entry] }] }], 'foreign-replica B'],
    // Origin on B's meta value: a new value for B's key (and an implicit delete of the old one).
    ["an origin on another replica's meta value", [{ client: X, clock: 0, structs: [{ origin: [2, 0] as const, any: [[3, 'evil']] }] }], 'foreign-meta B'],
    // After a Skip Yjs parks the item (integrated once the gap fills): still checked now.
    ["a parked item (after a Skip) in another replica's log", [{ client: X, clock: 0, structs: [{ skip: 5 }, { parent: 'tidemark:replica:B', any: [entry] }] }], 'foreign-replica B'],
    // Parked items under B's client id, right after what B wrote: the client id is B's.
    ["parked items under another replica's client id", [{ client: 2, clock: 3, structs: [{ skip: 5 }, { parent: 'tidemark:replica:A', any: [entry] }] }], 'client-id-squatting client 2 writes for B'],
    // ContentDeleted in B's log: deleted on arrival, but still an insert there.
    ["deleted content in another replica's log", [{ client: X, clock: 0, structs: [{ parent: 'tidemark:replica:B', deleted: 3 }] }], 'foreign-replica B'],
    // A map key in a log that the origin puts there: the key is copied from the left item (none: an array).
    ["a root map named like another replica's log", [{ client: X, clock: 0, structs: [{ parent: 'tidemark:replica:A', key: 'B', any: [entry] }] }], 'malformed-entry the log of A is an array, not a map'],
  ] as const)('%s', (_, sections, reason) => {
    const server = twoReplicas()
    const before = Y.encodeStateAsUpdate(server)
    expect(reasonOf(authorizeUpdate(server, v1Update(sections as never), A))).toBe(reason)
    expect(Y.encodeStateAsUpdate(server)).toEqual(before)
  })

  it("items after a Skip in its own log, with a delete range over them, are held: Yjs would park them, and integrate them unchecked over another client's writes once that client fills the gap", () => {
    const server = twoReplicas()
    // Client X wrote nothing here: a device that learned X from a presence could park items under it.
    const update = v1Update([{ client: X, clock: 0, structs: [{ skip: 1 }, { parent: 'tidemark:replica:A', deleted: 1000 }] }], [{ client: X, ranges: [[1, 1000]] as const }])
    const verdict = authorizeUpdate(server, update, A)
    expect(reasonOf(verdict)).toBe('missing')
    expect(!verdict.ok && verdict.missing && verdict.detail).toBe(`client ${X} skips 0..1, which the document does not have (up to 0)`)
    // It waits for what it skips: once the document has it, the verdict can change (held, not refused at once).
    expect(!verdict.ok && verdict.missing && verdict.needs).toEqual([{ client: X, clock: 1 }])
  })

  it.each([
    // Delete ranges naming B's items among A's, and a huge range past every state.
    ["a delete range spanning A's and B's items", [{ client: 2, ranges: [[0, 3]] as const }], 'foreign-meta B'],
    ['a delete range of 2^40 clocks past the state', [{ client: 1, ranges: [[3, 2 ** 40]] as const }], 'missing'],
    ["the same client's delete ranges listed twice, the second over B's items", [{ client: 1, ranges: [[1, 1]] as const }, { client: 1, ranges: [[0, 1]] as const }], `malformed-update delete ranges of client 1 overlap or are out of order at 0`],
  ] as const)('%s', (_, deletes, reason) => {
    const server = twoReplicas()
    expect(reasonOf(authorizeUpdate(server, v1Update([], deletes as never), A))).toBe(reason)
  })

  it('an info byte Yjs reads as a Skip and the decoder as an item is refused as undecodable', () => {
    const e = encoding.createEncoder()
    for (const n of [1, 1, X, 0, 10 | 0x80, 1, 0]) encoding.writeVarUint(e, n)
    const verdict = authorizeUpdate(twoReplicas(), encoding.toUint8Array(e), A)
    expect(!verdict.ok && !verdict.missing && verdict.refusal.kind).toBe('malformed-update')
  })
})

describe('through a relay', () => {
  const FLEET = 'fleet-w'
  const ROOM = `${FLEET}/d1`
  let relay: Relay
  let writer: RoomClient
  let dashboard: RoomClient
  const sockets: ReturnType<typeof relaySocket>[] = []
  const clients: RoomClient[] = []
  let marker = 0

  function open(token: string): RoomClient {
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const client = openRoom(socket, ROOM, token)
    clients.push(client)
    return client
  }

  /** The writer appends a marker; once the dashboard has it, anything sent before it was delivered or refused. */
  async function barrier(): Promise<void> {
    marker++
    replicaLog(writer.doc, 'd1').push([groupEntry('d1-temp', marker * 60_000)])
    const expected = replicaLog(writer.doc, 'd1').length
    await waitFor(() => replicaLog(dashboard.doc, 'd1').length === expected, `marker ${marker} on the dashboard`)
  }

  /** Sources and writers named anywhere in the dashboard's copy of the room, and its roots. */
  function seenByDashboard(): string {
    return JSON.stringify([[...dashboard.doc.share.keys()].sort(), replicaLog(dashboard.doc, 'd1').toJSON().map((entry) => entry.slice(0, 4))])
  }

  /** Waits until the relay holds `n` updates (its metrics). */
  async function waitUntilHeld(n: number): Promise<void> {
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_held_updates')) === n, `${n} held updates`, 60_000)
  }

  /** Sends `update` raw as the device d1 on a connection of its own; resolves with the refusal it gets. */
  async function attack(update: Uint8Array): Promise<string[]> {
    const attacker = open(await deviceToken(FLEET, 'd1'))
    await waitFor(() => attacker.synced(), 'the attacker synced')
    ;(sockets.at(-1) as ReturnType<typeof relaySocket>).send(updateFrame(ROOM, update))
    await waitFor(() => attacker.closed.length > 0 || seenByDashboard().includes('d2'), 'the refusal')
    await barrier()
    return attacker.closed
  }

  beforeAll(async () => {
    relay = await startRelay({ port: 0, store: { dataDir: freshDataDir() }, auth: { secret: SECRET }, persistence: { writeWindowMs: 20 }, log: () => undefined })
    writer = open(await deviceToken(FLEET, 'd1'))
    await waitFor(() => writer.synced(), 'the device synced')
    dashboard = open(await dashboardToken(FLEET))
    await waitFor(() => dashboard.synced(), 'the dashboard synced')
    await barrier()
  })

  afterAll(async () => {
    for (const client of clients) client.destroy()
    for (const socket of sockets) socket.destroy()
    await relay?.close()
    removeDataDirs()
  })

  it("a device cannot write first under a client id another device's connection shows as its presence; that device then writes under it", async () => {
    // A second device sharing the room, present before it wrote anything.
    const owner = open(await signToken({ sub: 'd9', role: 'device', rooms: [ROOM], replicas: ['d9'], sources: ['d9-temp'] }))
    await waitFor(() => owner.synced(), 'the second device synced')
    owner.provider.setAwarenessField('name', 'd9')
    const ownerId = owner.doc.clientID
    await waitFor(() => dashboard.provider.awareness?.getStates().get(ownerId) !== undefined, "the second device's presence")
    // d1, on another connection, learned that id: a million deleted clocks under it, in d1's own log.
    const attacker = open(await deviceToken(FLEET, 'd1'))
    await waitFor(() => attacker.synced(), 'the attacker synced')
    ;(sockets.at(-1) as ReturnType<typeof relaySocket>).send(updateFrame(ROOM, v1Update([{ client: ownerId, clock: 0, structs: [{ parent: 'tidemark:replica:d1', deleted: 1_000_000 }] }])))
    await waitFor(() => attacker.closed.length > 0, 'the refusal')
    expect(attacker.closed[0]).toContain(`client-id-squatting client ${ownerId} is another connection's presence`)
    // The owner's own first write under its id goes through to the dashboard.
    owner.doc.transact(() => {
      owner.doc.getMap('tidemark:meta').set('d9', [3, 'cfg'])
      replicaLog(owner.doc, 'd9').push([groupEntry('d9-temp', 0)])
    })
    await waitFor(() => replicaLog(dashboard.doc, 'd9').length === 1, "the second device's entry on the dashboard")
    expect(owner.closed).toEqual([])
    await barrier()
  })

  it("a device cannot park items and deletions after a Skip under a client id that wrote nothing: the owner's writes under it all arrive", async () => {
    const ownerDoc = new Y.Doc()
    const ownerId = ownerDoc.clientID
    // d1 parks, under an id nobody wrote with (nor shows presence for yet), deleted items in its own
    // log past a skipped clock, with the deletion of their range: Yjs would integrate both once
    // the owner's first write filled the gap, over the owner's own items.
    const attacker = open(await deviceToken(FLEET, 'd1'))
    await waitFor(() => attacker.synced(), 'the attacker synced')
    ;(sockets.at(-1) as ReturnType<typeof relaySocket>).send(
      updateFrame(ROOM, v1Update([{ client: ownerId, clock: 0, structs: [{ skip: 1 }, { parent: 'tidemark:replica:d1', deleted: 1000 }] }], [{ client: ownerId, ranges: [[1, 1000]] as const }])),
    )
    await barrier()
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const owner = openRoom(socket, ROOM, await signToken({ sub: 'd8', role: 'device', rooms: [ROOM], replicas: ['d8'], sources: ['d8-temp'] }), ownerDoc)
    clients.push(owner)
    await waitFor(() => owner.synced(), 'the owner synced')
    ownerDoc.transact(() => ownerDoc.getMap('tidemark:meta').set('d8', [3, 'cfg']))
    for (let i = 0; i < 5; i++) replicaLog(ownerDoc, 'd8').push([groupEntry('d8-temp', i * 60_000)])
    await waitFor(() => replicaLog(dashboard.doc, 'd8').length === 5, "the owner's five entries on the dashboard")
    await barrier()
    expect(replicaLog(dashboard.doc, 'd8').length).toBe(5)
    expect(owner.closed).toEqual([])
  })

  it("a client in several struct sections cannot slip another device's source into the device's own log", async () => {
    const update = v1Update([
      { client: X, clock: 0, structs: [{ gc: 1 }] },
      { client: X, clock: 0, structs: [{ gc: 1 }] },
      { client: X, clock: 0, structs: [{ parent: 'tidemark:replica:d1', any: [groupEntry('d1-temp', 0)] }, { origin: [X, 0], any: [groupEntry('d2-temp', 0), clockEntry('d2-temp', 'd2', 5)] }] },
    ])
    expect(await attack(update)).toEqual(['tidemark:refused malformed-update 3 struct sections for 1 clients'])
    expect(seenByDashboard()).not.toContain('d2')
  })
  it('an update held for what it depends on (another client, deleted items) is applied once that arrives on the connection', async () => {
    const first = new Y.Doc()
    const firstUpdates: Uint8Array[] = []
    first.on('update', (update: Uint8Array) => firstUpdates.push(update))
    replicaLog(first, 'd1').push([groupEntry('d1-temp', 7_000 * 60_000)])
    const second = new Y.Doc()
    Y.applyUpdate(second, Y.encodeStateAsUpdate(first))
    const secondUpdates: Uint8Array[] = []
    second.on('update', (update: Uint8Array) => secondUpdates.push(update))
    second.transact(() => {
      replicaLog(second, 'd1').delete(0, 1)
      replicaLog(second, 'd1').push([groupEntry('d1-temp', 7_001 * 60_000)])
    })
    const attacker = open(await deviceToken(FLEET, 'd1'))
    await waitFor(() => attacker.synced(), 'the device synced')
    const socket = sockets.at(-1) as ReturnType<typeof relaySocket>
    // The second session's change first: its origin and the item it deletes are the first's.
    socket.send(updateFrame(ROOM, Y.mergeUpdates(secondUpdates)))
    await waitUntilHeld(1)
    socket.send(updateFrame(ROOM, Y.mergeUpdates(firstUpdates)))
    await waitFor(() => seenByDashboard().includes('420060000'), 'the held update on the dashboard')
    expect(seenByDashboard()).not.toContain('420000000')
    await waitUntilHeld(0)
    expect(attacker.closed).toEqual([])
  })

  it('updates held for what they depend on are not checked again by every later message', async () => {
    const attacker = open(await deviceToken(FLEET, 'd1'))
    await waitFor(() => attacker.synced(), 'the attacker synced')
    const socket = sockets.at(-1) as ReturnType<typeof relaySocket>
    let received = 0
    attacker.provider.on('message', () => {
      received++
    })
    // Two updates of ~800 KB, each 400,000 GC structs and an entry whose origin nobody wrote: held.
    for (const client of [X + 1, X + 2]) {
      const structs: Struct[] = Array.from({ length: 400_000 }, () => ({ gc: 1 }))
      structs.push({ origin: [X + 3, 5], any: [groupEntry('d1-temp', 0)] })
      socket.send(updateFrame(ROOM, v1Update([{ client, clock: 0, structs }])))
    }
    await waitUntilHeld(2)
    // Then 20 frames that change nothing (token refreshes) and a sync step 1, answered once all were handled.
    const checkedBefore = checkedBytes.length
    const before = received
    for (let i = 0; i < 20; i++) socket.send(authFrame(ROOM, 'refresh'))
    // And entries of its own, each a change of the document, none what the held updates wait for.
    for (let i = 0; i < 10; i++) replicaLog(attacker.doc, 'd1').push([groupEntry('d1-temp', (1000 + i) * 60_000)])
    socket.send(syncFrame(ROOM, 0, Y.encodeStateVector(new Y.Doc())))
    await waitFor(() => received > before, 'the answer to the sync step 1', 60_000)
    // The provider sends the entries on its own schedule, the step 1 went straight to the socket:
    // the entries count as checked once the dashboard has every one of them.
    const own = Array.from({ length: 10 }, (_, i) => `,${(1000 + i) * 60_000},`)
    await waitFor(() => own.every((start) => seenByDashboard().includes(start)), "the device's own entries on the dashboard", 60_000)
    // The relay checked the device's own entries as they came (its checks are seen here), and
    // neither held update (~800 KB) again: every message changed nothing they wait for.
    const checked = checkedBytes.slice(checkedBefore)
    expect(checked.length).toBeGreaterThan(0)
    expect(checked.filter((bytes) => bytes > 100_000)).toEqual([])
    expect(attacker.closed).toEqual([])
  }, 90_000)
})
