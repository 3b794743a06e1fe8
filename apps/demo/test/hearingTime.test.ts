/**
 * `HearingTime`, the time the dashboard's clock and `RelayHearing` share: host time less the
 * time the dashboard did not hear, standing still from the first reading that does not hear.
 */
import { describe, expect, it } from 'vitest'
import { HearingClock } from '../src/fleet/hearingClock.ts'
import { HearingTime } from '../src/fleet/hearingTime.ts'

describe('HearingTime', () => {
  it('stands still from the first reading that does not hear, and runs on from there at the first that does', () => {
    const time = new HearingTime()
    expect(time.read(1_000, true)).toBe(1_000)
    expect(time.read(2_000, false)).toBe(2_000)
    expect(time.read(3_000, false)).toBe(2_000)
    // A host time inside the stop reads where it stood; one before it, as it ran.
    expect(time.at(2_500)).toBe(2_000)
    expect(time.at(1_500)).toBe(1_500)
    expect(time.read(5_000, true)).toBe(2_000)
    expect(time.read(6_000, true)).toBe(3_000)
    expect(time.at(5_500)).toBe(2_500)
  })

  it('adds up every stop', () => {
    const time = new HearingTime()
    time.read(0, false)
    time.read(1_000, true)
    time.read(2_000, false)
    expect(time.read(4_000, true)).toBe(1_000)
    expect(time.at(10_000)).toBe(7_000)
  })

  it('is what HearingClock reads', () => {
    let real = 10_000
    let hears = true
    const clock = new HearingClock(() => real)
    clock.listen(() => hears)
    expect(clock.now()).toBe(10_000)
    hears = false
    real = 11_000
    expect(clock.now()).toBe(11_000)
    real = 20_000
    expect(clock.now()).toBe(11_000)
    hears = true
    expect(clock.now()).toBe(11_000)
    real = 21_000
    expect(clock.now()).toBe(12_000)
  })
})
