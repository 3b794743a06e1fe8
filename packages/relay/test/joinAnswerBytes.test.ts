/**
 * What the relay weighs its answer to a join at (`joinAnswerBytes`), against the two messages
 * Hocuspocus sends for a step 1: the step 2 (`Y.encodeStateAsUpdate(document, held)`) and its own
 * step 1 (the document's state vector), each framed with the room's name. Documents written by
 * several clients, with deletions, with and without garbage collection (seeded).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { assertSeeded } from '@tidemark/seeded-random/property'
import { answerUpdateBytes, joinAnswerBytes } from '../src/gate/joinAnswer.ts'
import { answerBytes as answerBytesIn } from './support/answerMeasures.ts'

const FILE = 'packages/relay/test/joinAnswerBytes.test.ts'
const ROOM = 'fleet-a/d07'

/** The bytes Hocuspocus sends a client of `held` (encoded) in this file's room for its step 1. */
const answerBytes = (document: Y.Doc, held: Uint8Array): number => answerBytesIn(document, held, ROOM)

/** One client's change: text typed or erased, log entries pushed or dropped, a setting set. */
interface Edit {
  readonly writer: number
  readonly op: 'type' | 'erase' | 'push' | 'drop' | 'set'
  readonly at: number
  readonly count: number
}

const edit: fc.Arbitrary<Edit> = fc.record({
  writer: fc.integer({ min: 0, max: 2 }),
  op: fc.constantFrom('type' as const, 'erase' as const, 'push' as const, 'drop' as const, 'set' as const),
  at: fc.nat(),
  count: fc.integer({ min: 1, max: 40 }),
})

/** A document written by three clients through `edits`, each synced into it as it is made. */
function written(edits: readonly Edit[], gc: boolean): Y.Doc {
  const document = new Y.Doc({ gc })
  const writers = [0, 1, 2].map((i) => {
    const doc = new Y.Doc({ gc })
    doc.clientID = 1_000 + i * 70_000
    return doc
  })
  for (const step of edits) {
    const doc = writers[step.writer] as Y.Doc
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(document, Y.encodeStateVector(doc)))
    const text = doc.getText('notes')
    const log = doc.getArray<unknown>('log')
    if (step.op === 'type') text.insert(step.at % (text.length + 1), 'x'.repeat(step.count))
    else if (step.op === 'erase' && text.length > 0) text.delete(step.at % text.length, Math.min(step.count, text.length - (step.at % text.length)))
    else if (step.op === 'push') log.push(Array.from({ length: step.count }, (_, i) => ['g', step.at, i]))
    else if (step.op === 'drop' && log.length > 0) log.delete(step.at % log.length, Math.min(step.count, log.length - (step.at % log.length)))
    else doc.getMap('meta').set(`k${step.at % 5}`, step.count)
    Y.applyUpdate(document, Y.encodeStateAsUpdate(doc, Y.encodeStateVector(document)))
  }
  return document
}

describe('joinAnswerBytes', () => {
  it('weighs the answer to a client holding every clock at no less than what Hocuspocus sends it, its update exactly (seeded)', () => {
    assertSeeded(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 60 }), fc.boolean(), fc.integer({ min: 0, max: 3 }), (edits, gc, ahead) => {
        const document = written(edits, gc)
        const own = Y.decodeStateVector(Y.encodeStateVector(document))
        // A client may hold more than the room (clients it wrote as, clocks past the room's).
        const heldState = new Map(own)
        for (let i = 0; i < ahead; i++) heldState.set(900_000 + i, 1 + i * 1_000)
        for (const [client, clock] of own) if (ahead > 1) heldState.set(client, clock + ahead * 200)
        const held = Y.encodeStateVector(heldState)
        const weight = joinAnswerBytes(document, ROOM, Y.decodeStateVector(held), held.byteLength) as number
        const sent = answerBytes(document, held)
        expect(weight).toBeGreaterThanOrEqual(sent)
        expect(weight - sent).toBeLessThanOrEqual(20 + held.byteLength - Y.encodeStateVector(document).byteLength)
        // The update (its delete set) is weighed exactly; its frame and the room's state vector are not.
        expect(answerUpdateBytes(document, Y.decodeStateVector(held))).toBe(Y.encodeStateAsUpdate(document, held).byteLength)
      }),
      FILE,
      'weighs the answer to a client holding every clock at no less than what Hocuspocus sends it, its update exactly (seeded)',
      200,
    )
  })

  it('measures a room again once it changed, and only then: a room weighed for one holder is weighed anew after a deletion', () => {
    const document = new Y.Doc()
    const log = document.getArray<number>('log')
    log.push(Array.from({ length: 50 }, (_, i) => i))
    const holds = () => Y.decodeStateVector(Y.encodeStateVector(document))
    expect(answerUpdateBytes(document, holds())).toBe(Y.encodeStateAsUpdate(document, Y.encodeStateVector(document)).byteLength)
    for (const at of [40, 20, 3]) {
      log.delete(at, 2)
      const weight = answerUpdateBytes(document, holds())
      expect(weight).toBe(Y.encodeStateAsUpdate(document, Y.encodeStateVector(document)).byteLength)
      // Unchanged since: the same measure, without a walk (the structs changed under it would show otherwise).
      expect(answerUpdateBytes(document, holds())).toBe(weight)
    }
  })

  it('weighs a client lacking one clock of any client, or a client whole, at what it is sent; is null for a room holding pending updates', () => {
    const document = written(
      [
        { writer: 0, op: 'type', at: 0, count: 5 },
        { writer: 1, op: 'push', at: 3, count: 4 },
      ],
      true,
    )
    const own = Y.decodeStateVector(Y.encodeStateVector(document))
    const sv = Y.encodeStateVector(document)
    expect(joinAnswerBytes(document, ROOM, own, sv.byteLength)).not.toBeNull()
    for (const client of own.keys()) {
      const lacking = new Map(own)
      lacking.set(client, (own.get(client) as number) - 1)
      expect(joinAnswerBytes(document, ROOM, lacking, sv.byteLength)).toBe(answerBytes(document, Y.encodeStateVector(lacking)))
      lacking.delete(client)
      expect(joinAnswerBytes(document, ROOM, lacking, sv.byteLength)).toBe(answerBytes(document, Y.encodeStateVector(lacking)))
    }
    expect(joinAnswerBytes(document, ROOM, new Map(), 1)).toBe(answerBytes(document, new Uint8Array([0])))
    // An update whose predecessor is missing stays pending in the document, and the answer carries it.
    const writer = new Y.Doc()
    writer.getArray('log').push([1])
    const first = Y.encodeStateAsUpdate(writer)
    writer.getArray('log').push([2])
    Y.applyUpdate(document, Y.encodeStateAsUpdate(writer, Y.encodeStateVectorFromUpdate(first)))
    expect(document.store.pendingStructs).not.toBeNull()
    expect(joinAnswerBytes(document, ROOM, own, sv.byteLength)).toBeNull()
  })
})
