/**
 * The bytes of updates a sender may have the relay decode, per room (a relay enforcing it:
 * limits.test.ts).
 */
import { describe, expect, it } from 'vitest'
import { UpdateBytes } from '../src/gate/updateBytes.ts'

describe('UpdateBytes', () => {
  it('gives each sender and room a burst, refills it over time, and charges one message at most a burst', () => {
    let now = 0
    const budget = new UpdateBytes(1_000, 10_000, () => now)
    expect([budget.take('a', 'r1', 6_000), budget.take('a', 'r1', 4_000), budget.take('a', 'r1', 1)]).toEqual([true, true, false])
    // Another room of the same sender, and another sender in the same room, have their own.
    expect([budget.take('a', 'r2', 10_000), budget.take('b', 'r1', 10_000)]).toEqual([true, true])
    now += 500
    expect([budget.take('a', 'r1', 600), budget.take('a', 'r1', 500)]).toEqual([false, true])
    // A message larger than a burst passes on a full bucket, and empties it.
    now += 60_000
    expect([budget.take('a', 'r1', 50_000), budget.take('a', 'r1', 1)]).toEqual([true, false])
  })

  it('lets go of the buckets that are full again once it keeps many, and keeps those still refilling', () => {
    let now = 0
    const budget = new UpdateBytes(1_000, 10_000, () => now)
    for (let i = 0; i < 1_023; i++) budget.take(`s${i}`, 'r', 1_000)
    budget.take('busy', 'r', 10_000)
    expect(budget.size).toBe(1_024)
    // 1 s on: the first 1,023 are full again, 'busy' is not.
    now += 1_000
    budget.take('next', 'r', 1)
    expect(budget.size).toBe(2)
    expect(budget.take('busy', 'r', 1_001)).toBe(false)
  })
})
