import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { SeqRing } from '../src/time/seqRing.ts'
import { assertSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/seqRing.test.ts'

type Op =
  | { kind: 'set'; seq: number; ts: number }
  | { kind: 'add'; seq: number; ts: number }
  | { kind: 'delete'; seq: number }
  | { kind: 'advance'; by: number }
  | { kind: 'forget'; horizon: number }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constantFrom('set' as const, 'add' as const), seq: fc.oneof(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 60_000, max: 200_000 })), ts: fc.integer() }),
  fc.record({ kind: fc.constant('delete' as const), seq: fc.integer({ min: 1, max: 300 }) }),
  fc.record({ kind: fc.constant('advance' as const), by: fc.oneof(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 60_000, max: 140_000 })) }),
  fc.record({ kind: fc.constant('forget' as const), horizon: fc.integer() }),
)

describe('SeqRing', () => {
  it('behaves like a Map of the seqs above the prefix', () => {
    const property = fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
      const window = new SeqRing()
      const model = new Map<number, number>()
      let prefix = 0
      for (const o of ops) {
        if (o.kind === 'set' || o.kind === 'add') {
          if (o.seq <= prefix) continue
          // `add` is for a seq not held (a clock adds only seqs it has not seen); a held one is `set`.
          if (o.kind === 'add' && !model.has(o.seq)) window.add(o.seq, o.ts)
          else window.set(o.seq, o.ts)
          model.set(o.seq, o.ts)
        } else if (o.kind === 'delete') {
          window.delete(o.seq)
          model.delete(o.seq)
        } else if (o.kind === 'forget') {
          let released = 0
          for (const [seq, ts] of model) {
            if (ts < o.horizon) {
              model.delete(seq)
              released++
            }
          }
          expect(window.forgetBefore(o.horizon)).toBe(released)
        } else {
          prefix += o.by
          window.advanceBase(prefix)
          for (const seq of model.keys()) if (seq <= prefix) model.delete(seq)
        }
        expect(window.size).toBe(model.size)
      }
      for (const [seq, ts] of model) expect(window.get(seq)).toBe(ts)
      expect(new Map(window)).toEqual(model)
      for (let seq = prefix + 1; seq < prefix + 400; seq++) {
        expect(window.has(seq)).toBe(model.has(seq))
        expect(window.holds(seq)).toBe(model.has(seq))
        expect(window.foundTs).toBe(model.get(seq) ?? Number.NaN)
      }
    })
    assertSeeded(property, FILE, 'behaves like a Map of the seqs above the prefix', 300)
  }, PROPERTY_TIMEOUT)
})
