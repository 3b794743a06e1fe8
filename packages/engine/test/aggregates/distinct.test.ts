import { seededRandom } from '@tidemark/seeded-random'
import { assertSeeded } from '@tidemark/seeded-random/property'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { distinct } from '@tidemark/engine'
import { hash64 } from '../../src/aggregates/hash64.ts'
import { bytesOf, eventOf, mergedState, shuffled, stateOf } from './aggregateEvents.ts'

const FILE = 'packages/engine/test/aggregates/distinct.test.ts'

function property<T>(name: string, arbitrary: fc.Arbitrary<T>, check: (value: T) => void, runs = 100): void {
  it(name, () => assertSeeded(fc.property(arbitrary, check), FILE, name, runs), 60_000)
}

/** `n` distinct identities drawn from a seed, each repeated 1–3 times. */
function identities(n: number, seed: number): (string | number)[] {
  const random = seededRandom(seed)
  const out: (string | number)[] = []
  for (let i = 0; i < n; i++) {
    const id = random() < 0.5 ? `device-${seed}-${i}` : seed * 1e7 + i
    const copies = 1 + Math.floor(random() * 3)
    for (let c = 0; c < copies; c++) out.push(id)
  }
  return out
}

describe('distinct: counts', () => {
  it('is exact up to 2^(precision − 4) identities, duplicates and repeats ignored', () => {
    const devices = distinct({ of: (event) => event.source })
    expect(devices.result(devices.init())).toBe(0)
    for (const n of [1, 2, 17, 1023, 1024]) expect(devices.result(stateOf(devices, identities(n, n)))).toBe(n)
    expect(devices.encode(stateOf(devices, identities(1024, 3)))[1]).toBe(0) // still the explicit set
    expect(devices.encode(stateOf(devices, identities(1025, 3)))[1]).toBe(1) // sparse registers
  })

  it("keeps strings and numbers apart, and -0 equal to 0", () => {
    const d = distinct()
    expect(d.result(stateOf(d, ['1', 1, 1.0, 0, -0, '0', '']))).toBe(5) // '1', 1, 0, '0', ''
  })

  it.each([2_000, 20_000, 200_000])('estimates %i identities within 3 standard errors (3 × 0.81% at precision 14)', (n) => {
    const d = distinct()
    let state = d.init()
    for (let i = 0; i < n; i++) state = d.add(state, `sensor-${i}`, eventOf(0, i))
    expect(Math.abs(d.result(state) - n) / n).toBeLessThanOrEqual(3 * (1.04 / Math.sqrt(2 ** 14)))
  })

  it.each([4, 10, 16])('estimates within 3 standard errors at precision %i, on numbers as well', (precision) => {
    const d = distinct({ precision })
    const n = 50 * 2 ** precision
    let state = d.init()
    for (let i = 0; i < n; i++) state = d.add(state, i, eventOf(0, i))
    expect(Math.abs(d.result(state) - n) / n).toBeLessThanOrEqual(3 * (1.04 / Math.sqrt(2 ** precision)))
  })
})

describe('distinct: convergence', () => {
  property(
    'any delivery order, batching and merge tree gives the same bytes, across the switch to registers',
    fc.record({
      n: fc.integer({ min: 0, max: 120 }),
      seed: fc.integer({ min: 0, max: 1000 }),
      precision: fc.constantFrom(4, 6, 8, 14),
      cuts: fc.array(fc.nat(), { maxLength: 8 }),
      order: fc.array(fc.integer(), { maxLength: 9 }),
    }),
    ({ n, seed, precision, cuts, order }) => {
      const d = distinct({ precision })
      const inputs = identities(n, seed)
      const reference = d.encode(stateOf(d, inputs))
      const reordered = shuffled(inputs, seededRandom(seed + 1))
      expect(d.encode(stateOf(d, reordered))).toEqual(reference)
      expect(d.encode(mergedState(d, reordered, cuts, order))).toEqual(reference)
    },
  )

  property(
    'folding pieces into one accumulator (mergeInto) gives the bytes of merge, and leaves the pieces as they were',
    fc.record({
      n: fc.integer({ min: 0, max: 120 }),
      seed: fc.integer({ min: 0, max: 1000 }),
      precision: fc.constantFrom(4, 6, 8, 14),
      cuts: fc.array(fc.nat(), { maxLength: 12 }),
    }),
    ({ n, seed, precision, cuts }) => {
      const d = distinct({ precision })
      const inputs = shuffled(identities(n, seed), seededRandom(seed + 1))
      const points = [...new Set(cuts.map((c) => c % (inputs.length + 1)))].sort((a, b) => a - b)
      const pieces = [...points, inputs.length].map((p, i) => stateOf(d, inputs.slice(i === 0 ? 0 : points[i - 1], p)))
      const before = pieces.map((piece) => d.encode(piece))
      const merged = pieces.reduce((acc, piece) => d.merge(acc, piece), d.init())
      const folded = pieces.reduce((acc, piece) => (d.mergeInto as NonNullable<typeof d.mergeInto>)(acc, piece), d.init())
      expect(d.encode(folded)).toEqual(d.encode(merged))
      expect(d.result(folded)).toBe(d.result(merged))
      expect(pieces.map((piece) => d.encode(piece))).toEqual(before)
    },
  )

  it('merges idempotently and round-trips the dense registers', () => {
    const d = distinct({ precision: 8 })
    const state = stateOf(d, identities(5_000, 9))
    const bytes = d.encode(state)
    expect(bytes[1]).toBe(2) // dense: most registers are set
    expect(bytes.length).toBe(2 + 192)
    expect(d.encode(d.merge(state, state))).toEqual(bytes)
    expect(d.encode(d.decode(bytes))).toEqual(bytes)
  })

  it('hashes to the same bits everywhere (pinned values)', () => {
    const out = new Uint32Array(2)
    const hex = (x: string | number) => {
      hash64(x, out)
      return [out[0], out[1]].map((w) => (w as number).toString(16).padStart(8, '0')).join('')
    }
    expect([hex(''), hex('device-17'), hex('1'), hex(1), hex(-0), hex(1.5), hex('\ud800')]).toEqual([
      '2924ff2ce3d278d0',
      'f2943079560432d7',
      '1c69388aba441f92',
      '22cec0831cc2eadb',
      'a524a281d66337c9',
      'bf12bc113f74afa2',
      'f07f907956ba5b9c',
    ])
  })
})

describe('distinct: hostile bytes', () => {
  const d = distinct({ precision: 4 })
  const explicitOne = d.encode(stateOf(d, ['a']))
  const cases: [string, Uint8Array, RegExp][] = [
    ['a wrong format byte', bytesOf('45 00 00'), /format byte 0x45 is not 0x44/],
    ['an unknown mode', bytesOf('44 07'), /unknown mode 7/],
    ['more explicit hashes than the limit', bytesOf('44 00 02'), /explicit hash count 2 exceeds 1/],
    ['a truncated hash', explicitOne.subarray(0, 7), /truncated/],
    ['trailing bytes', new Uint8Array([...explicitOne, 1]), /trailing/],
    ['more sparse registers than a quarter', bytesOf('44 01 05'), /non-zero register count 5 exceeds 4/],
    ['a sparse register index past the end', bytesOf('44 01 01 10 01'), /register gap 16 exceeds|index 16/],
    ['a repeated sparse index', bytesOf('44 01 02 03 01 00 01'), /repeats/],
    ['a register value above 65 − precision', bytesOf('44 01 01 00 3e'), /register value 62 is not from 1 to 61/],
    ['a zero sparse register', bytesOf('44 01 01 00 00'), /register value 0/],
    ['dense registers cut short', bytesOf('44 02 00 00'), /dense registers need 12 bytes, 2 left/],
    ['dense registers that should be sparse', bytesOf(`44 02 ${'00'.repeat(12)}`), /at most a quarter are written sparse/],
    ['a 2^60 explicit count', bytesOf('44 00 80 80 80 80 80 80 80 80'), /longer than 8 bytes/],
  ]
  it.each(cases)('rejects %s with a RangeError naming the problem', (_name, bytes, message) => {
    expect(() => d.decode(bytes)).toThrow(RangeError)
    expect(() => d.decode(bytes)).toThrow(message)
  })

  it('rejects explicit hashes out of order', () => {
    const two = distinct({ precision: 5 })
    const bytes = two.encode(stateOf(two, ['a', 'b']))
    const swapped = new Uint8Array([...bytes.subarray(0, 3), ...bytes.subarray(11, 19), ...bytes.subarray(3, 11)])
    expect(() => two.decode(swapped)).toThrow(/explicit hashes must increase/)
  })

  property('random bytes decode or throw a RangeError, never anything else', fc.uint8Array({ maxLength: 30 }), (bytes) => {
    for (const mode of [0, 1, 2]) {
      try {
        d.decode(new Uint8Array([0x44, mode, ...bytes]))
      } catch (error) {
        expect(error).toBeInstanceOf(RangeError)
      }
    }
  }, 1000)
})

describe('distinct: options and input', () => {
  it.each([
    [{ precision: 3 }, /precision must be an integer from 4 to 16, got 3/],
    [{ precision: 14.5 }, /precision must be an integer/],
    [{ of: (e: { source: string }) => e.source, precission: 12 }, /unknown option 'precission' \(did you mean 'precision'\?\)/],
  ])('refuses %j', (options, message) => {
    expect(() => distinct(options as never)).toThrow(message)
  })

  it('fingerprints the precision, and refuses inputs that are not strings or finite numbers', () => {
    expect(distinct().configuration).toBe('distinct(precision=14)')
    const d = distinct({ of: (event) => event.key as string })
    expect(d.checkInput('temp')).toBeNull()
    expect(d.checkInput(Number.NaN)).toBe('expected a string or a finite number, got NaN')
    expect(d.checkInput(undefined as unknown as string)).toBe('expected a string or a finite number, got undefined')
    expect(() => d.add(d.init(), {} as unknown as string, eventOf(1))).toThrow(/distinct: cannot add/)
  })
})
