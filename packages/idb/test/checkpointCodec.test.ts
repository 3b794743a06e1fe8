import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createEngine, type TidemarkEngine, tumbling } from '@tidemark/engine'
import { decodeEngineCheckpoint, encodeEngineCheckpoint } from '../src/index.ts'
import { assertSeeded } from '@tidemark/seeded-random/property'
import { name } from './arbitraries.ts'

const FILE = 'packages/idb/test/checkpointCodec.test.ts'

const exactNumber = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN, -0, 2 ** 53 - 1, -(2 ** 53) + 1, 2 ** 53, 0.1),
)

/** Plain data as a checkpoint holds it, with the awkward corners: non-finite numbers, lone surrogates, hostile keys. */
const plain = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    exactNumber,
    name,
    fc.string({ maxLength: 200 }),
    fc.constantFrom(null, true, false, undefined),
    fc.array(tie('value'), { maxLength: 6 }),
    fc.dictionary(fc.oneof(name, fc.constantFrom('__proto__', 'constructor', '')), tie('value'), { maxKeys: 6, noNullPrototype: true }),
  ),
})).value

/** Encodes any plain value through the checkpoint codec (the top level must be an object). */
function roundTrip(value: unknown): unknown {
  const wrapped = { value } as unknown as Parameters<typeof encodeEngineCheckpoint>[0]
  return (decodeEngineCheckpoint(encodeEngineCheckpoint(wrapped)) as unknown as { value: unknown }).value
}

describe('checkpointCodec', () => {
  it('round-trips plain data exactly: -0, NaN, ±Infinity, lone surrogates, undefined, __proto__ keys', () => {
    assertSeeded(
      fc.property(plain, (value) => {
        expect(identical(roundTrip(value), value)).toBe(true)
      }),
      FILE,
      'round-trips plain data exactly',
      300,
    )
  })

  it('keeps -0 apart from 0, an undefined property apart from an absent one, and __proto__ as an own key', () => {
    const decoded = roundTrip({ zero: -0, gone: undefined, __proto__key: 1, list: [undefined, Number.NaN] }) as Record<string, unknown>
    expect(Object.is(decoded.zero, -0)).toBe(true)
    expect('gone' in decoded).toBe(true)
    const hostile = JSON.parse('{"__proto__": {"polluted": true}}') as object
    const back = roundTrip(hostile) as Record<string, unknown>
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype)
    expect(Object.keys(back)).toEqual(['__proto__'])
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('stores repeated names once', () => {
    const one = encodeEngineCheckpoint({ value: [{ source: 'device-with-a-long-name', key: 'temperature' }] } as never).length
    const many = encodeEngineCheckpoint({
      value: Array.from({ length: 101 }, () => ({ source: 'device-with-a-long-name', key: 'temperature' })),
    } as never).length
    // Per extra object: tag, count, two key refs and two value refs, a few bytes each.
    expect((many - one) / 100).toBeLessThanOrEqual(12)
  })

  it('keeps bytes (aggregate states) as bytes, copied out of the record', () => {
    const states = [new Uint8Array([0x51, 0, 1, 2, 3]), new Uint8Array(0), new Uint8Array(300).fill(7)]
    const bytes = encodeEngineCheckpoint({ value: states } as never)
    const decoded = roundTrip(states) as Uint8Array[]
    expect(decoded.every((b) => b instanceof Uint8Array && b.buffer !== bytes.buffer)).toBe(true)
    expect(decoded.map((b) => [...b])).toEqual(states.map((b) => [...b]))
  })

  it('names what is not plain data', () => {
    expect(() => encodeEngineCheckpoint({ value: new Map() } as never)).toThrow(/checkpoint holds a Map, not plain data/)
    expect(() => encodeEngineCheckpoint({ value: () => 1 } as never)).toThrow(/function, not plain data/)
    expect(() => encodeEngineCheckpoint({ value: 1n } as never)).toThrow(/bigint, not plain data/)
  })

  it('throws a RangeError, never anything else, on damaged or foreign bytes', () => {
    const engine = createEngine({ windows: tumbling(10), replicaId: 'r' }) as TidemarkEngine
    engine.ingest([
      { id: 'a', source: 'd1', seq: 1, ts: 3, value: 1, key: 'k' },
      { id: 'b', source: 'd2', ts: 14, value: 2 },
    ])
    const bytes = encodeEngineCheckpoint(engine.checkpoint())
    let refused = 0
    assertSeeded(
      fc.property(fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 3 }), fc.nat(), (flips, cut) => {
        const damaged = bytes.slice(0, bytes.length - (cut % 3 === 0 ? cut % bytes.length : 0))
        for (const [position, mask] of flips) damaged[position % damaged.length] = (damaged[position % damaged.length] as number) ^ mask
        try {
          decodeEngineCheckpoint(damaged)
        } catch (error) {
          expect(error).toBeInstanceOf(RangeError)
          refused++
        }
      }),
      FILE,
      'throws a RangeError, never anything else, on damaged or foreign bytes',
      500,
    )
    // Some damage must actually be refused, or the check above never ran.
    expect(refused).toBeGreaterThan(0)
    expect(() => decodeEngineCheckpoint(new TextEncoder().encode('{"json": true}'))).toThrow(/bad magic/)
  })
})

/** Same plain data, judged strictly: Object.is for every leaf, own keys in the same order, same prototypes. */
function identical(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b)
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b) || Array.isArray(a) !== Array.isArray(b)) return false
  const keysA = Object.keys(a)
  const keysB = Object.keys(b)
  if (keysA.length !== keysB.length || keysA.some((key, i) => key !== keysB[i])) return false
  return keysA.every((key) => identical((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]))
}

