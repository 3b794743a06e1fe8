import { assertSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { stormReading, stragglingReadings } from '../src/contract/stormReading.ts'

const FILE = 'packages/storm/test/stormReading.test.ts'

describe('stormReading', () => {
  it('is the pinned reading: seeds printed by earlier storms replay the same events', () => {
    expect(stormReading(7, 'device-a1', 1)).toEqual({ id: 'device-a1#1', source: 'device-a1', seq: 1, ts: 1_700_000_000_010, key: 'k1', value: 2 })
    const stragglers = Array.from({ length: 2_000 }, (_, k) => stormReading(708_397_302, 's', k + 1)).filter((r) => r.ts !== 1_700_000_000_000 + (r.seq as number) * 10)
    expect(stragglers.length).toMatchInlineSnapshot(`97`)
    expect(stragglers[0]).toMatchInlineSnapshot(`
      {
        "id": "s#4",
        "key": "k0",
        "seq": 4,
        "source": "s",
        "ts": 1699999996418,
        "value": 5,
      }
    `)
  })

  it('is a pure function of seed, source and seq; stragglers are at most maxBehindMs behind, about one in stragglerEvery', () => {
    const name = 'is a pure function of seed, source and seq; stragglers are at most maxBehindMs behind, about one in stragglerEvery'
    assertSeeded(
      fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 2, max: 50 }), (seed, maxBehindMs, stragglerEvery) => {
        const reading = stragglingReadings({ maxBehindMs, stragglerEvery, stepMs: 5, t0: 0 })
        let stragglers = 0
        for (let seq = 1; seq <= 1_000; seq++) {
          const event = reading(seed, 'dev', seq)
          expect(reading(seed, 'dev', seq)).toEqual(event)
          expect(reading(seed, 'other', seq).ts).toBe(event.ts)
          const behind = seq * 5 - event.ts
          expect(behind).toBeGreaterThanOrEqual(0)
          expect(behind).toBeLessThan(maxBehindMs)
          if (behind > 0) stragglers++
        }
        // 1,000 draws of a 1-in-n event: far outside these bounds only if straggling ignored the option.
        expect(stragglers).toBeLessThanOrEqual((3 * 1_000) / stragglerEvery + 10)
      }),
      FILE,
      name,
      50,
    )
  }, PROPERTY_TIMEOUT)

  it('by default: event time t0 + seq × 10 ms, about one in 20 up to 9 s behind, keys k0..k3, values 1..7', () => {
    const readings = Array.from({ length: 20_000 }, (_, k) => stormReading(708_397_302, 's', k + 1))
    const behind = readings.map((r) => 1_700_000_000_000 + (r.seq as number) * 10 - r.ts)
    const stragglers = behind.filter((ms) => ms > 0)
    expect(Math.min(...behind)).toBe(0)
    expect(Math.max(...behind)).toBeLessThan(9_000)
    expect(Math.max(...behind)).toBeGreaterThan(8_000)
    expect(stragglers.length / readings.length).toBeGreaterThan(0.04)
    expect(stragglers.length / readings.length).toBeLessThan(0.06)
    expect(new Set(readings.map((r) => r.key))).toEqual(new Set(['k0', 'k1', 'k2', 'k3']))
    expect(new Set(readings.map((r) => r.value))).toEqual(new Set([1, 2, 3, 4, 5, 6, 7]))
  })

  it('refuses options that are not positive integers, naming them', () => {
    expect(() => stragglingReadings({ stepMs: 0 })).toThrow('stragglingReadings: stepMs must be a positive integer, got 0')
    expect(() => stragglingReadings({ keys: 1.5 })).toThrow(/keys must be a positive integer, got 1.5/)
    expect(() => stragglingReadings({ t0: Number.NaN })).toThrow(/t0 must be an integer/)
  })
})
