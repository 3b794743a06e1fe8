/**
 * authorizeUpdate against Tidemark's layout, without a relay: what a grant may insert and
 * delete, what it may not (and why), updates that depend on ones not yet applied, and a seeded
 * property: every update a replica makes of its own log is accepted, every write into another
 * replica's is refused, and the document is never mutated by a check.
 */
import { assertSeeded } from '@tidemark/seeded-random/property'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { authorizeUpdate, type WriteGrant } from '../src/index.ts'
import { clockEntry, groupEntry, replicaLog } from './support/roomClients.ts'

const FILE = 'packages/relay/test/authorizeUpdate.test.ts'
const A: WriteGrant = { replicas: new Set(['A']), sources: new Set(['s-A']) }
const B: WriteGrant = { replicas: new Set(['B']), sources: new Set(['s-B']) }

function recorder(doc: Y.Doc): Uint8Array[] {
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  return updates
}

function fingerprint(doc: Y.Doc): string {
  return Buffer.from(Y.encodeStateAsUpdate(doc)).toString('base64')
}

/** A server doc where A and B each wrote their meta entry and a few entries, and A's and B's docs in sync with it. */
function setup(): { server: Y.Doc; a: Y.Doc; b: Y.Doc } {
  const server = new Y.Doc()
  const a = new Y.Doc()
  const b = new Y.Doc()
  a.transact(() => {
    a.getMap('tidemark:meta').set('A', [2, 'cfg'])
    replicaLog(a, 'A').push([groupEntry('s-A', 0), groupEntry('s-A', 60_000), clockEntry('s-A', 'A', 1)])
  })
  b.transact(() => {
    b.getMap('tidemark:meta').set('B', [2, 'cfg'])
    replicaLog(b, 'B').push([groupEntry('s-B', 0), clockEntry('s-B', 'B', 1)])
  })
  for (const [doc, grant] of [
    [a, A],
    [b, B],
  ] as const) {
    const update = Y.encodeStateAsUpdate(doc, Y.encodeStateVector(server))
    expect(authorizeUpdate(server, update, grant).ok).toBe(true)
    Y.applyUpdate(server, update)
  }
  Y.applyUpdate(a, Y.encodeStateAsUpdate(server))
  Y.applyUpdate(b, Y.encodeStateAsUpdate(server))
  return { server, a, b }
}

/** The verdict on `doc`'s next change (checked for not mutating the server doc), applied to it when accepted. */
function verdictOf(server: Y.Doc, doc: Y.Doc, grant: WriteGrant, change: () => void): ReturnType<typeof authorizeUpdate> {
  const updates = recorder(doc)
  doc.transact(change)
  const update = Y.mergeUpdates(updates)
  const before = fingerprint(server)
  const verdict = authorizeUpdate(server, update, grant)
  expect(fingerprint(server)).toBe(before)
  if (verdict.ok) Y.applyUpdate(server, update)
  return verdict
}

function reasonOf(verdict: ReturnType<typeof authorizeUpdate>): string {
  if (verdict.ok) return 'accepted'
  return verdict.missing ? 'missing' : verdict.refusal.text
}

describe('authorizeUpdate', () => {
  it('accepts a replica writing its own log and meta entry, superseding its entries', () => {
    const { server, a } = setup()
    expect(reasonOf(verdictOf(server, a, A, () => replicaLog(a, 'A').push([groupEntry('s-A', 120_000)])))).toBe('accepted')
    expect(reasonOf(verdictOf(server, a, A, () => a.getMap('tidemark:meta').set('A', [2, 'cfg2'])))).toBe('accepted')
    expect(reasonOf(verdictOf(server, a, A, () => replicaLog(a, 'A').delete(0, 2)))).toBe('accepted')
  })

  it('accepts deleting entries of its own sources in another replica log, and refuses deleting others', () => {
    const { server, a, b } = setup()
    // B's log holds an entry of A's source (a shared source, merged from A): A may retire it.
    const updates = recorder(b)
    replicaLog(b, 'B').push([groupEntry('s-A', 180_000)])
    Y.applyUpdate(server, Y.mergeUpdates(updates))
    Y.applyUpdate(a, Y.encodeStateAsUpdate(server))
    expect(reasonOf(verdictOf(server, a, A, () => replicaLog(a, 'B').delete(2, 1)))).toBe('accepted')
    const again = setup()
    expect(reasonOf(verdictOf(again.server, again.a, A, () => replicaLog(again.a, 'B').delete(0, 1)))).toBe('foreign-replica B')
    expect(reasonOf(verdictOf(again.server, again.a, A, () => again.a.getMap('tidemark:meta').delete('B')))).toBe('foreign-meta B')
  })

  it.each([
    ['an entry in another log', (a: Y.Doc) => replicaLog(a, 'B').push([groupEntry('s-A', 0)]), 'foreign-replica B'],
    ["another replica's meta entry", (a: Y.Doc): void => void a.getMap('tidemark:meta').set('B', [2, 'x']), 'foreign-meta B'],
    ['a group of another source', (a: Y.Doc) => replicaLog(a, 'A').push([groupEntry('s-B', 0)]), 'foreign-source s-B'],
    ['a clock of another source', (a: Y.Doc) => replicaLog(a, 'A').push([clockEntry('s-B', 'A', 2)]), 'foreign-source s-B'],
    ['a clock naming another writer', (a: Y.Doc) => replicaLog(a, 'A').push([clockEntry('s-A', 'B', 2)]), 'foreign-replica B'],
    ['a malformed meta value', (a: Y.Doc): void => void a.getMap('tidemark:meta').set('A', 'cfg'), 'malformed-entry malformed meta value for A'],
    ['something that is no entry', (a: Y.Doc) => replicaLog(a, 'A').push([['x']]), 'malformed-entry not a group or clock entry in the log of A'],
    ['text in a log', (a: Y.Doc) => a.getArray('tidemark:replica:A').insert(0, ['plain text' as never]), 'malformed-entry not a group or clock entry in the log of A'],
    ['a root outside the schema', (a: Y.Doc) => a.getArray('other').push([1]), 'unknown-root other'],
    ['a nested type', (a: Y.Doc) => replicaLog(a, 'A').push([new Y.Array() as never]), 'nested-type'],
    ['a map key in a log', (a: Y.Doc): void => void a.getMap('tidemark:replica:C').set('k', 1), 'malformed-entry the log of C is an array, not a map'],
  ])('refuses %s', (_, change, reason) => {
    const { server, a } = setup()
    expect(reasonOf(verdictOf(server, a, A, () => change(a)))).toBe(reason)
  })

  it("refuses new items under a client id that wrote another replica's log", () => {
    const { server, b } = setup()
    // A's grant, B's client id: B's later items would look like duplicates to every peer.
    expect(reasonOf(verdictOf(server, b, A, () => replicaLog(b, 'A').push([groupEntry('s-A', 0)])))).toBe(`client-id-squatting client ${b.clientID} writes for B`)
  })

  it('finds updates that depend on ones not applied yet, and accepts them once those are', () => {
    const { server, a } = setup()
    const updates = recorder(a)
    replicaLog(a, 'A').push([groupEntry('s-A', 120_000)])
    replicaLog(a, 'A').push([groupEntry('s-A', 180_000)])
    const [first, second] = updates as [Uint8Array, Uint8Array]
    expect(reasonOf(authorizeUpdate(server, second, A))).toBe('missing')
    expect(reasonOf(authorizeUpdate(server, first, A))).toBe('accepted')
    Y.applyUpdate(server, first)
    expect(reasonOf(authorizeUpdate(server, second, A))).toBe('accepted')
  })

  it('checks only the part of an item the document lacks: an item re-sent whole after it grew', () => {
    const { server, a } = setup()
    const log = replicaLog(a, 'A')
    // Three pushes of one client in a row: Yjs keeps them as one item, re-sent whole by a full
    // state update (a provider's sync step 2 after a reload, say), while the server has its start.
    expect(reasonOf(verdictOf(server, a, A, () => log.push([groupEntry('s-A', 120_000)])))).toBe('accepted')
    const grown = (entry: unknown[]): Uint8Array => {
      const doc = new Y.Doc()
      Y.applyUpdate(doc, Y.encodeStateAsUpdate(a))
      doc.clientID = a.clientID
      replicaLog(doc, 'A').push([entry])
      return Y.encodeStateAsUpdate(doc)
    }
    const item = (update: Uint8Array) => Y.decodeUpdate(update).structs.filter((struct) => struct.id.client === a.clientID && struct.length > 1)
    const offset = Y.getState(server.store, a.clientID)
    // Valid growth: accepted, and only the new entry counts as inserted.
    const valid = grown(groupEntry('s-A', 180_000))
    expect(item(valid).some((struct) => struct.id.clock < offset && struct.id.clock + struct.length > offset)).toBe(true)
    const verdict = authorizeUpdate(server, valid, A)
    expect(verdict).toEqual({ ok: true, inserts: 1, deletes: 0, collected: 0 })
    // The same item grown by another source's entry: the part past the server's state is read, and refused.
    expect(reasonOf(authorizeUpdate(server, grown(groupEntry('s-B', 180_000)), A))).toBe('foreign-source s-B')
    // What the server has is not read again: under a token whose sources changed since, the
    // item's start (entries of s-A) would be refused, its new part (of s-A2) is not.
    const renewed: WriteGrant = { replicas: new Set(['A']), sources: new Set(['s-A2']) }
    expect(reasonOf(authorizeUpdate(server, grown(groupEntry('s-A2', 180_000)), renewed))).toBe('accepted')
    Y.applyUpdate(server, valid)
    expect(replicaLog(server, 'A').length).toBe(5)
  })

  it('refuses bytes that are no update', () => {
    const { server } = setup()
    const verdict = authorizeUpdate(server, new Uint8Array([1, 200, 3]), A)
    expect(verdict.ok === false && !verdict.missing && verdict.refusal.kind).toBe('malformed-update')
  })

  it('accepts every change a replica makes to its own log and meta, and refuses every write into another log (seeded)', () => {
    const step = fc.oneof(
      fc.record({ op: fc.constant('push' as const), start: fc.integer({ min: 0, max: 50 }), clock: fc.boolean() }),
      fc.record({ op: fc.constant('delete' as const), at: fc.nat(), count: fc.integer({ min: 1, max: 3 }) }),
      fc.record({ op: fc.constant('meta' as const), configuration: fc.string({ maxLength: 8 }) }),
      fc.record({ op: fc.constant('foreign' as const), start: fc.integer({ min: 0, max: 50 }) }),
    )
    assertSeeded(
      fc.property(fc.array(step, { minLength: 1, maxLength: 30 }), (steps) => {
        const { server, a } = setup()
        for (const s of steps) {
          const log = replicaLog(a, 'A')
          const change = (): void => {
            if (s.op === 'push') log.push([s.clock ? clockEntry('s-A', 'A', s.start) : groupEntry('s-A', s.start * 60_000)])
            else if (s.op === 'delete') {
              if (log.length > 0) log.delete(s.at % log.length, Math.min(s.count, log.length - (s.at % log.length)))
            } else if (s.op === 'meta') a.getMap('tidemark:meta').set('A', [2, s.configuration])
            else replicaLog(a, 'B').push([groupEntry('s-A', s.start)])
          }
          const updates = recorder(a)
          a.transact(change)
          if (updates.length === 0) continue
          const update = Y.mergeUpdates(updates)
          const verdict = reasonOf(authorizeUpdate(server, update, A))
          if (s.op === 'foreign') {
            expect(verdict).toBe('foreign-replica B')
            return
          }
          expect(verdict).toBe('accepted')
          Y.applyUpdate(server, update)
        }
        expect(fingerprint(server)).toBe(fingerprint(a))
      }),
      FILE,
      'accepts every change a replica makes to its own log and meta, and refuses every write into another log (seeded)',
      200,
    )
  })
})
