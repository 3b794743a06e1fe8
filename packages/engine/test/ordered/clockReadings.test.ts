/**
 * The ordered stream's processing-time clock (`now`), as the engine reads it
 * (docs/bad-input.md, B17 and B49): a reading that is not a number throws a TypeError naming
 * `now` before the call changes anything; NaN is a number and is tolerated, an arrival read
 * while the clock read NaN counting as arriving at the next finite reading, so
 * `stats().oldestPendingAge` stays a number of ms.
 */
import { describe, expect, it } from 'vitest'
import { createOrderedStream } from '../../src/ordered/orderedStream.ts'
import { manual } from '../../src/time/watermarkStrategy.ts'
import { ev } from './streamHelpers.ts'

const NOT_A_NUMBER = /now must be a function returning processing time in ms, got one returning/

describe('ordered stream: a now() reading that is not a number', () => {
  it('push refuses a clock reading a string (now: Date) with a TypeError, and holds nothing', () => {
    const stream = createOrderedStream({ watermark: manual(), idleTimeout: 5, now: Date as unknown as () => number })
    expect(() => stream.push([ev('a', 1, 10)])).toThrow(NOT_A_NUMBER)
    expect(() => stream.flushReady()).toThrow(NOT_A_NUMBER)
  })

  it('a bigint reading throws from the call that read it before it changes anything; the stream serves once the clock reads a number', () => {
    let reading: unknown = 0
    const stream = createOrderedStream({ watermark: manual(), now: () => reading as number })
    reading = 0n
    expect(() => stream.push([ev('a', 1, 10)])).toThrow(TypeError)
    expect(() => stream.finishSource('a')).toThrow(NOT_A_NUMBER)
    expect(() => stream.flushReady()).toThrow(NOT_A_NUMBER)
    reading = 1
    const { pushed, accepted, flushes, sources, pending } = stream.stats()
    expect({ pushed, accepted, flushes, sources, pending }).toEqual({ pushed: 0, accepted: 0, flushes: 0, sources: 0, pending: 0 })
    expect(stream.push([ev('a', 1, 10)]).accepted).toBe(1)
  })

  it('checks that now is a function when the stream is made', () => {
    expect(() => createOrderedStream({ now: 5 as unknown as () => number })).toThrow(/now must be a function returning processing time in ms, got 5/)
  })
})

describe('ordered stream: NaN and infinite clock readings and oldestPendingAge', () => {
  it('an arrival while the clock read NaN counts from the next finite reading', () => {
    let t = Number.NaN
    const stream = createOrderedStream({ watermark: manual(), now: () => t })
    stream.push([ev('a', 1, 10)])
    t = 1_000
    stream.push([ev('a', 2, 20)])
    t = 5_000
    expect(stream.stats().oldestPendingAge).toBe(4_000)
  })

  it('a flush is a reading too; while the clock reads NaN the age is 0, not NaN', () => {
    let t = Number.NaN
    const stream = createOrderedStream({ watermark: manual(), now: () => t })
    stream.push([ev('a', 1, 10)])
    expect(stream.stats().oldestPendingAge).toBe(0)
    t = 2_000
    stream.flushReady()
    t = 2_500
    expect(stream.stats().oldestPendingAge).toBe(500)
  })

  it('while the clock reads an infinity the age is 0, not Infinity (an alert on the age would fire for a clock that gave no time)', () => {
    let t = 1_000
    const stream = createOrderedStream({ watermark: manual(), now: () => t })
    stream.push([ev('a', 1, 10)])
    t = Number.POSITIVE_INFINITY
    expect(stream.stats().oldestPendingAge).toBe(0)
    t = Number.NEGATIVE_INFINITY
    expect(stream.stats().oldestPendingAge).toBe(0)
    t = 1_700
    expect(stream.stats().oldestPendingAge).toBe(700)
  })
})
