import { assertSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { toggleIntervals, toggleRange, toggleSchedule } from '../src/driver/toggleSchedule.ts'

const FILE = 'packages/storm/test/toggleSchedule.test.ts'

const range = fc
  .tuple(fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 0, max: 1_000 }))
  .map(([min, extra]): [number, number] => [min, min + extra])

describe('toggleSchedule', () => {
  it('draws intervals in [min, max], alternates offline/online from offline, and ends before the duration', () => {
    const name = 'draws intervals in [min, max], alternates offline/online from offline, and ends before the duration'
    assertSeeded(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 }), fc.integer({ min: 0, max: 20 }), range, fc.integer({ min: 0, max: 30_000 }), (seed, device, intervalMs, durationMs) => {
        const schedule = toggleSchedule(seed, device, intervalMs, durationMs)
        let at = 0
        for (const [k, toggle] of schedule.entries()) {
          expect(toggle.intervalMs).toBeGreaterThanOrEqual(intervalMs[0])
          expect(toggle.intervalMs).toBeLessThanOrEqual(intervalMs[1])
          at += toggle.intervalMs
          expect(toggle.atMs).toBe(at)
          expect(toggle.offline).toBe(k % 2 === 0)
        }
        if (schedule.length > 0) expect(at).toBeLessThan(durationMs)
        // The next draw would have been due at or after the end: nothing due in time is left out.
        const next = toggleIntervals(seed, device, intervalMs)
        for (let k = 0; k < schedule.length; k++) next()
        expect(at + next()).toBeGreaterThanOrEqual(durationMs)
      }),
      FILE,
      name,
      300,
    )
  }, PROPERTY_TIMEOUT)

  it('replays a seed: the same schedule every time, another one for another device or seed', () => {
    const name = 'replays a seed: the same schedule every time, another one for another device or seed'
    assertSeeded(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 }), fc.integer({ min: 0, max: 20 }), (seed, device) => {
        const schedule = toggleSchedule(seed, device, [50, 500], 10_000)
        expect(toggleSchedule(seed, device, [50, 500], 10_000)).toEqual(schedule)
        expect(toggleSchedule(seed, device + 1, [50, 500], 10_000)).not.toEqual(schedule)
        expect(toggleSchedule(seed + 1, device, [50, 500], 10_000)).not.toEqual(schedule)
      }),
      FILE,
      name,
      200,
    )
  }, PROPERTY_TIMEOUT)

  it('keeps the pinned schedule of seed 708397302, device 0 (printed seeds replay the same storm)', () => {
    const schedule = toggleSchedule(708_397_302, 0, [50, 500], 1_000).map((t) => Math.round(t.atMs))
    expect(schedule).toMatchInlineSnapshot(`
      [
        385,
        640,
        794,
      ]
    `)
  })

  it('refuses a range that could not move time forward', () => {
    expect(() => toggleRange([0, 500])).toThrow('storm toggles: the interval range must be [min, max] ms with 0 < min <= max, got [0, 500]')
    expect(() => toggleRange([500, 50])).toThrow(/got \[500, 50\]/)
    expect(() => toggleSchedule(1, 0, [Number.NaN, 10], 1_000)).toThrow(RangeError)
    expect(toggleRange([50, 50])).toEqual([50, 50])
  })
})
