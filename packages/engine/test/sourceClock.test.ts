import { describe, expect, it } from 'vitest'
import { SourceClock } from '../src/time/sourceClock.ts'

describe('SourceClock.remember', () => {
  it('takes seq, id and ts from the event: a seq ahead of a gap waits in dedup memory until the gap fills', () => {
    const clock = new SourceClock('d1', 0)
    clock.remember({ seq: 1, id: 'd1-1', ts: 1_000 })
    clock.remember({ seq: 3, id: 'd1-3', ts: 3_000 })
    expect(clock.prefix).toBe(1)
    expect(clock.ahead.get(3)).toBe(3_000)
    expect(clock.seen(3, 'd1-3')).toBe(true)
    expect(clock.seen(2, 'd1-2')).toBe(false)
    clock.remember({ seq: 2, id: 'd1-2', ts: 2_000 })
    expect(clock.prefix).toBe(3)
    expect(clock.prefixTs).toBe(3_000)
    expect(clock.ahead.size).toBe(0)
    expect(clock.maxTs).toBe(3_000)
    expect(clock.version).toBe(3)
  })

  it('remembers an event without seq by its id, with its ts', () => {
    const clock = new SourceClock('d1', 0)
    clock.remember({ id: 'a', ts: 5_000 })
    expect(clock.ids.get('a')).toBe(5_000)
    expect(clock.seen(undefined, 'a')).toBe(true)
    expect(clock.provable).toBe(false)
  })

  it('sets lastSeen only when given now', () => {
    const clock = new SourceClock('d1', 10)
    clock.remember({ seq: 1, id: 'd1-1', ts: 1_000 })
    expect(clock.lastSeen).toBe(10)
    clock.remember({ seq: 2, id: 'd1-2', ts: 2_000 }, 25)
    expect(clock.lastSeen).toBe(25)
  })

  it('conflict reads the copy’s seq, id and ts from the event: a copy with another ts is proven not the first delivery', () => {
    const clock = new SourceClock('d1', 0)
    clock.remember({ seq: 1, id: 'd1-1', ts: 60_000 })
    clock.remember({ seq: 3, id: 'd1-3', ts: 180_000 })
    expect(clock.conflict({ seq: 1, id: 'd1-1', ts: 60_000 })).toBeNull()
    expect(clock.conflict({ seq: 1, id: 'd1-1', ts: 61_000 })).toBe("seq 1 of source 'd1' was first taken with ts 60000; this copy has ts 61000 (the first delivery wins)")
    expect(clock.conflict({ seq: 3, id: 'd1-3', ts: 170_000 })).toBe("seq 3 of source 'd1' was first taken with ts 180000; this copy has ts 170000 (the first delivery wins)")
  })
})
