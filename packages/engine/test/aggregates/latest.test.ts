import { seededRandom } from '@tidemark/seeded-random'
import { assertSeeded } from '@tidemark/seeded-random/property'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { StreamEvent } from '../../src/input/event.ts'
import { latest } from '@tidemark/engine'
import { bytesOf, shuffled } from './aggregateEvents.ts'

const FILE = 'packages/engine/test/aggregates/latest.test.ts'

const reading = latest()
function fold(events: readonly StreamEvent[]) {
  let state = reading.init()
  for (const event of events) state = reading.add(state, reading.read(event), event)
  return state
}
const at = (ts: number, source: string, value: number, seq?: number): StreamEvent =>
  seq === undefined ? { id: `${source}-${ts}-${value}`, source, ts, value } : { id: `${source}-${seq}`, source, seq, ts, value }

describe('latest', () => {
  it('shows the value of the greatest ts; ties go to the greatest source, then seq', () => {
    expect(reading.result(reading.init())).toBeNull()
    expect(reading.result(fold([at(5, 'a', 1), at(9, 'a', 2), at(7, 'z', 3)]))).toBe(2)
    expect(reading.result(fold([at(9, 'b', 1), at(9, 'a', 2)]))).toBe(1)
    expect(reading.result(fold([at(9, 'a', 1, 4), at(9, 'a', 2, 3)]))).toBe(1)
  })

  it('breaks ties by source in UTF-16 code unit order, then by seq (absent counts as 0), then by the greater value', () => {
    // '\uffff' is above '\ud83d\ude00' in UTF-16 code units, below it in code points.
    expect(reading.result(fold([at(9, '\uffff', 1), at(9, '\ud83d\ude00', 2)]))).toBe(1)
    expect(reading.result(fold([at(9, '\ud83d\ude00', 2), at(9, '\uffff', 1)]))).toBe(1)
    expect(reading.result(fold([at(9, 'a', 1, 1), at(9, 'a', 2)]))).toBe(1) // seq 1 beats no seq
    expect(reading.result(fold([at(9, 'a', 2), at(9, 'a', 1, 0)]))).toBe(2) // seq 0 ties with no seq: the greater value
    expect(reading.result(fold([at(9, 'a', -3), at(9, 'a', 7), at(9, 'a', 5)]))).toBe(7)
  })

  it('reads what of returns', () => {
    const fahrenheit = latest({ of: (event) => event.value * 1.8 + 32 })
    const event = at(1, 'a', 100)
    expect(fahrenheit.result(fahrenheit.add(fahrenheit.init(), fahrenheit.read(event), event))).toBe(212)
  })

  it('treats -0 as 0, so equal events give the same bytes in any order', () => {
    const a = fold([at(-0, 'a', -0), at(0, 'a', 0)])
    const b = fold([at(0, 'a', 0), at(-0, 'a', -0)])
    expect(reading.encode(a)).toEqual(reading.encode(b))
    expect(Object.is(reading.result(a), 0)).toBe(true)
  })

  it(
    'gives the same bytes for any delivery order and merge grouping',
    () => {
      const event = fc.record({
        ts: fc.integer({ min: 0, max: 3 }),
        source: fc.constantFrom('a', 'b', '\ud800', 'é'),
        seq: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
        value: fc.integer({ min: -2, max: 2 }),
      })
      assertSeeded(
        fc.property(fc.array(event, { maxLength: 12 }), fc.integer(), fc.nat(), (raw, seed, cut) => {
          const events = raw.map((e) => at(e.ts, e.source, e.value, e.seq))
          const reference = reading.encode(fold(events))
          const mixed = shuffled(events, seededRandom(seed))
          const k = cut % (events.length + 1)
          expect(reading.encode(reading.merge(fold(mixed.slice(k)), fold(mixed.slice(0, k))))).toEqual(reference)
          expect(reading.decode(reference)).toEqual(fold(events))
        }),
        FILE,
        'gives the same bytes for any delivery order and merge grouping',
        300,
      )
    },
    60_000,
  )

  it.each([
    ['a wrong format byte', bytesOf('4d 00'), /format byte 0x4d is not 0x4c/],
    ['a presence byte of 2', bytesOf('4c 02'), /presence byte 2 is not 0 or 1/],
    ['a truncated state', bytesOf('4c 01 00 00'), /truncated/],
    ['NaN as value', bytesOf('4c 01 0000000000000000 000000000000f87f 00 01 61'), /value is NaN/],
    ['-0 as ts', bytesOf('4c 01 0000000000000080 0000000000000000 00 01 61'), /-0 as ts or value/],
    ['an empty source', bytesOf('4c 01 0000000000000000 0000000000000000 00 00'), /empty source/],
    ['a source longer than 1024', bytesOf('4c 01 0000000000000000 0000000000000000 00 81 08'), /source length 1025 exceeds 1024/],
    ['a code unit past 0xffff', bytesOf('4c 01 0000000000000000 0000000000000000 00 01 80 80 04'), /source code unit 65536 exceeds 65535/],
    ['trailing bytes', bytesOf('4c 00 00'), /trailing/],
  ])('rejects %s with a RangeError naming the problem', (_name, bytes, message) => {
    expect(() => reading.decode(bytes)).toThrow(RangeError)
    expect(() => reading.decode(bytes)).toThrow(message)
  })

  it('refuses unknown options and non-finite input', () => {
    expect(() => latest({ off: () => 1 } as never)).toThrow(/unknown option 'off' \(did you mean 'of'\?\)/)
    expect(reading.checkInput(Number.POSITIVE_INFINITY)).toBe('expected a finite number, got Infinity')
    expect(() => reading.add(null, Number.NaN, at(1, 'a', 1))).toThrow(/latest: cannot add NaN/)
    expect(reading.configuration).toBe('latest')
    expect(reading.idempotent).toBe(true)
  })
})
