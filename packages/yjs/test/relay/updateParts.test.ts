/**
 * An update cut into parts for the relay's message limit: every part fits, no part waits for a
 * later one (applied in order, the receiver never holds pending structs or deletes), and the
 * parts make the document the update makes.
 */
import { assertSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { splitUpdate } from '../../src/relay/updateParts.ts'

const FILE = 'packages/yjs/test/relay/updateParts.test.ts'

/** One step of a history: a client edits its doc, or two clients exchange what they miss. */
type Step =
  | { readonly kind: 'insert'; readonly doc: number; readonly at: number; readonly text: string }
  | { readonly kind: 'delete'; readonly doc: number; readonly at: number; readonly length: number }
  | { readonly kind: 'set'; readonly doc: number; readonly key: number; readonly value: number; readonly nested: boolean }
  | { readonly kind: 'push'; readonly doc: number; readonly at: number; readonly entries: readonly string[] }
  | { readonly kind: 'sync'; readonly from: number; readonly to: number }

const DOCS = 3

// Syncs and inserts weigh most: a struct placed next to another client's is what the order of the parts is for.
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('insert' as const), doc: fc.nat(DOCS - 1), at: fc.nat(), text: fc.string({ minLength: 1, maxLength: 40 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), doc: fc.nat(DOCS - 1), at: fc.nat(), length: fc.integer({ min: 1, max: 30 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('set' as const), doc: fc.nat(DOCS - 1), key: fc.nat(40), value: fc.double({ noNaN: true }), nested: fc.boolean() }) },
  // One insert of many array entries: larger than a part, it is cut between entries.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('push' as const), doc: fc.nat(DOCS - 1), at: fc.nat(), entries: fc.array(fc.string({ maxLength: 20 }), { minLength: 1, maxLength: 60 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('sync' as const), from: fc.nat(DOCS - 1), to: fc.nat(DOCS - 1) }) },
)

/** Plays `steps` on three docs (client ids 1, 2, 3); returns them. */
function play(steps: readonly Step[]): Y.Doc[] {
  const docs = Array.from({ length: DOCS }, (_, i) => {
    const doc = new Y.Doc()
    doc.clientID = i + 1
    return doc
  })
  for (const s of steps) {
    if (s.kind === 'sync') {
      const from = docs[s.from] as Y.Doc
      const to = docs[s.to] as Y.Doc
      Y.applyUpdate(to, Y.encodeStateAsUpdate(from, Y.encodeStateVector(to)))
      continue
    }
    const doc = docs[s.doc] as Y.Doc
    const text = doc.getText('log')
    if (s.kind === 'push') {
      const entries = doc.getArray<string>('entries')
      entries.insert(s.at % (entries.length + 1), [...s.entries])
    } else if (s.kind === 'insert') text.insert(s.at % (text.length + 1), s.text)
    else if (s.kind === 'delete') {
      if (text.length > 0) text.delete(s.at % text.length, Math.min(s.length, text.length - (s.at % text.length)))
    } else if (s.nested) {
      const inner = new Y.Map<number>()
      doc.getMap('cells').set(`k${s.key}`, inner)
      inner.set('v', s.value)
    } else {
      doc.getMap('cells').set(`k${s.key}`, s.value)
    }
  }
  return docs
}

/** Applies `parts` in order to a doc holding `base`; each must leave nothing pending. */
function applyParts(base: Uint8Array, parts: readonly Uint8Array[]): Y.Doc {
  const doc = new Y.Doc()
  Y.applyUpdate(doc, base)
  for (const [i, part] of parts.entries()) {
    Y.applyUpdate(doc, part)
    if (doc.store.pendingStructs !== null || doc.store.pendingDs !== null) throw new Error(`part ${i} of ${parts.length} left structs or deletes waiting`)
  }
  return doc
}

describe('splitUpdate', () => {
  it(
    'cuts any history into parts that fit, apply in order without waiting, and make the same document',
    () => {
      const name = 'cuts any history into parts that fit, apply in order without waiting, and make the same document'
      const property = fc.property(fc.array(step, { minLength: 10, maxLength: 200, size: 'max' }), fc.integer({ min: 1, max: 100 }), fc.nat(DOCS - 1), (steps, percent, behind) => {
        const docs = play(steps)
        // What one doc misses of all the others, as a sync step 2 answering its state vector would carry it.
        const all = new Y.Doc()
        for (const doc of docs) Y.applyUpdate(all, Y.encodeStateAsUpdate(doc))
        const base = Y.encodeStateAsUpdate(docs[behind] as Y.Doc)
        const update = Y.encodeStateAsUpdate(all, Y.encodeStateVector(docs[behind] as Y.Doc))
        // A limit of some share of the update (at least 96 bytes, more than any one struct here takes).
        const maxBytes = Math.max(96, Math.floor((update.byteLength * percent) / 100))
        const parts = splitUpdate(update, maxBytes)
        // One entry here (a text insert of 40 characters, a map entry, an array entry) takes less than 70 bytes: every history fits.
        if (parts === null) throw new Error(`refused an update of ${update.byteLength} bytes at ${maxBytes}`)
        for (const part of parts) expect(part.byteLength).toBeLessThanOrEqual(maxBytes)
        if (update.byteLength <= maxBytes) expect(parts).toEqual([update])
        const whole = new Y.Doc()
        Y.applyUpdate(whole, base)
        Y.applyUpdate(whole, update)
        const cut = applyParts(base, parts)
        expect(cut.getText('log').toString()).toBe(whole.getText('log').toString())
        expect(cut.getMap('cells').toJSON()).toEqual(whole.getMap('cells').toJSON())
        expect(cut.getArray('entries').toJSON()).toEqual(whole.getArray('entries').toJSON())
        expect(Y.encodeStateVector(cut)).toEqual(Y.encodeStateVector(whole))
        expect(Y.encodeStateAsUpdate(cut)).toEqual(Y.encodeStateAsUpdate(whole))
        return true
      })
      assertSeeded(property, FILE, name, 300)
    },
    PROPERTY_TIMEOUT,
  )

  it('cuts a large sync into parts of at most the limit, the deletes last', () => {
    const [doc] = play([])
    const text = (doc as Y.Doc).getText('log')
    for (let i = 0; i < 2_000; i++) text.insert(i === 0 ? 0 : (i * 7919) % text.length, `r${i};`)
    text.delete(10, 5_000)
    const update = Y.encodeStateAsUpdate(doc as Y.Doc)
    expect(update.byteLength).toBeGreaterThan(20_000)
    const parts = splitUpdate(update, 4_096) as Uint8Array[]
    expect(parts.length).toBeGreaterThanOrEqual(Math.ceil(update.byteLength / 4_096))
    for (const part of parts) expect(part.byteLength).toBeLessThanOrEqual(4_096)
    // Only the last part deletes.
    expect(parts.slice(0, -1).every((part) => Y.decodeUpdate(part).ds.clients.size === 0)).toBe(true)
    expect(Y.decodeUpdate(parts.at(-1) as Uint8Array).ds.clients.size).toBe(1)
    expect(applyParts(new Uint8Array([0, 0]), parts).getText('log').toString()).toBe(text.toString())

    // Every other character deleted: a delete set of thousands of ranges, larger than a part, cut into parts of its own.
    for (let at = 0; at < Math.min(text.length, 6_000); at++) text.delete(at, 1)
    const scattered = Y.encodeStateAsUpdate(doc as Y.Doc)
    const ranges = Y.decodeUpdate(scattered).ds.clients.get(1)?.length ?? 0
    expect(ranges).toBeGreaterThan(2_000)
    const cut = splitUpdate(scattered, 1_024) as Uint8Array[]
    for (const part of cut) expect(part.byteLength).toBeLessThanOrEqual(1_024)
    const deleting = cut.filter((part) => Y.decodeUpdate(part).ds.clients.size > 0)
    expect(deleting.length).toBeGreaterThan(4)
    expect(deleting.every((part) => Y.decodeUpdate(part).structs.length === 0 || part === cut.at(-deleting.length))).toBe(true)
    expect(applyParts(new Uint8Array([0, 0]), cut).getText('log').toString()).toBe(text.toString())
  })

  it('cuts one insert of many array entries between entries, each piece after the one before', () => {
    const doc = new Y.Doc()
    const entries = doc.getArray<{ key: string; cells: number[] }>('log')
    entries.push([{ key: 'first', cells: [0] }])
    const before = Y.encodeStateAsUpdate(doc)
    let update: Uint8Array = new Uint8Array()
    doc.once('update', (bytes: Uint8Array) => {
      update = bytes
    })
    entries.insert(1, Array.from({ length: 500 }, (_, i) => ({ key: `zone-${i}`, cells: [i, i * 2, i * 3] })))
    expect(Y.decodeUpdate(update).structs).toHaveLength(1)
    const parts = splitUpdate(update, 2_048) as Uint8Array[]
    expect(parts.length).toBeGreaterThanOrEqual(Math.ceil(update.byteLength / 2_048))
    for (const part of parts) expect(part.byteLength).toBeLessThanOrEqual(2_048)
    expect(applyParts(before, parts).getArray('log').toJSON()).toEqual(entries.toJSON())
  })

  it('answers null when one entry alone is larger than the limit', () => {
    const doc = new Y.Doc()
    doc.getMap('cells').set('wide', 'x'.repeat(5_000))
    doc.getMap('cells').set('small', 1)
    expect(splitUpdate(Y.encodeStateAsUpdate(doc), 4_096)).toBeNull()
    doc.getArray('log').push(['y'.repeat(5_000), 'z'])
    expect(splitUpdate(Y.encodeStateAsUpdate(doc), 4_096)).toBeNull()
  })
})
