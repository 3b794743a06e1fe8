import { describe, expect, it } from 'vitest'
import { SourceClock } from '../src/time/sourceClock.ts'

describe('SourceClock', () => {
  it('records seq, id and ts from the event: a seq ahead of a gap waits in dedup memory until the gap fills', () => {
    const clock = new SourceClock('d1', 0)
    clock.record({ seq: 1, id: 'd1-1', ts: 1_000 })
    clock.record({ seq: 3, id: 'd1-3', ts: 3_000 })
    expect(clock.prefix).toBe(1)
    expect(clock.ahead.get(3)).toBe(3_000)
    expect(clock.seen(3, 'd1-3')).toBe(true)
    expect(clock.seen(2, 'd1-2')).toBe(false)
    clock.record({ seq: 2, id: 'd1-2', ts: 2_000 })
    expect(clock.prefix).toBe(3)
    expect(clock.prefixTs).toBe(3_000)
    expect(clock.ahead.size).toBe(0)
    expect(clock.maxTs).toBe(3_000)
    expect(clock.version).toBe(3)
  })

  it('records an event without seq by its id, with its ts', () => {
    const clock = new SourceClock('d1', 0)
    clock.record({ id: 'a', ts: 5_000 })
    expect(clock.ids.get('a')).toBe(5_000)
    expect(clock.seen(undefined, 'a')).toBe(true)
    expect(clock.provable).toBe(false)
  })

  it('remember sets lastSeen to now; record leaves it to the caller', () => {
    const clock = new SourceClock('d1', 10)
    clock.record({ seq: 1, id: 'd1-1', ts: 1_000 })
    expect(clock.lastSeen).toBe(10)
    clock.remember({ seq: 2, id: 'd1-2', ts: 2_000 }, 25)
    expect(clock.lastSeen).toBe(25)
    expect(clock.prefix).toBe(2)
  })

  it("conflict reads the copy's seq, id and ts from the event: a copy with another ts is proven not the first delivery", () => {
    const clock = new SourceClock('d1', 0)
    clock.record({ seq: 1, id: 'd1-1', ts: 60_000 })
    clock.record({ seq: 2, id: 'd1-2', ts: 120_000 })
    clock.record({ seq: 4, id: 'd1-4', ts: 240_000 })
    clock.record({ id: 'x', ts: 30_000 })
    // The seq at the prefix, a seq ahead of a gap, an id: each compared with the ts kept for it.
    expect(clock.conflict({ seq: 2, id: 'd1-2', ts: 120_000 })).toBeNull()
    expect(clock.conflict({ seq: 2, id: 'd1-2', ts: 121_000 })).toBe("seq 2 of source 'd1' was first taken with ts 120000; this copy has ts 121000 (the first delivery wins)")
    expect(clock.conflict({ seq: 4, id: 'd1-4', ts: 230_000 })).toBe("seq 4 of source 'd1' was first taken with ts 240000; this copy has ts 230000 (the first delivery wins)")
    expect(clock.conflict({ id: 'x', ts: 31_000 })).toBe("id 'x' of source 'd1' was first taken with ts 30000; this copy has ts 31000 (the first delivery wins)")
    // Inside the prefix only the prefix's latest ts is kept: a later ts proves a conflict, an earlier one cannot.
    expect(clock.conflict({ seq: 1, id: 'd1-1', ts: 50_000 })).toBeNull()
    expect(clock.conflict({ seq: 1, id: 'd1-1', ts: 130_000 })).toBe("seq 1 of source 'd1' was first taken at or before ts 120000; this copy has ts 130000 (the first delivery wins)")
  })

  it('forgetBefore releases the ids and the seqs held ahead whose ts is below the horizon, and says how many', () => {
    const clock = new SourceClock('d1', 0)
    clock.record({ seq: 1, id: 'd1-1', ts: 1_000 })
    clock.record({ seq: 3, id: 'd1-3', ts: 3_000 })
    clock.record({ seq: 5, id: 'd1-5', ts: 5_000 })
    clock.record({ seq: 100_000, id: 'far', ts: 4_000 })
    clock.record({ id: 'a', ts: 2_000 })
    clock.record({ id: 'b', ts: 6_000 })
    expect(clock.dedupEntries()).toBe(5)
    expect(clock.forgetBefore(4_500)).toBe(3)
    expect(clock.dedupEntries()).toBe(2)
    expect([...clock.ids.keys()]).toEqual(['b'])
    expect([...clock.ahead]).toEqual([[5, 5_000]])
    // A released seq is no longer known as seen (a copy of it would be beyond lateness); a kept one is.
    expect(clock.seen(3, 'd1-3')).toBe(false)
    expect(clock.seen(5, 'd1-5')).toBe(true)
    expect(clock.forgetBefore(10_000)).toBe(2)
    expect(clock.dedupEntries()).toBe(0)
  })
})
