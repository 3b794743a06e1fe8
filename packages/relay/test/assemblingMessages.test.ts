/**
 * The relay's account of messages being received in parts: bytes in all and per sender, and
 * which stalled or overdue messages to let go when a part would pass the cap.
 */
import { describe, expect, it } from 'vitest'
import { AssemblingMessages, MIN_PART_BYTES_PER_SECOND } from '../src/gate/messageParts.ts'

const STALL_MS = 30_000

describe('AssemblingMessages', () => {
  const owners = { a: { name: 'a' }, b: { name: 'b' }, c: { name: 'c' } }
  /** Sockets that received nothing since. */
  const still = (read: Map<object, number>) => (owner: object) => read.get(owner) ?? 0

  it('counts bytes in all and per sender, and lets go of an owner whole', () => {
    const assembling = new AssemblingMessages<object, string>(STALL_MS)
    assembling.added(owners.a, 'a', 'device-1', 100, 10, 0, 0)
    assembling.added(owners.b, 'b', 'device-2', 100, 20, 0, 0)
    assembling.added(owners.c, 'c', 'device-1', 100, 7, 0, 0)
    assembling.added(owners.a, 'a', 'device-1', 100, 5, 1, 0)
    expect([assembling.bytes, assembling.bytesOf('device-1'), assembling.bytesOf('device-2')]).toEqual([42, 22, 20])
    assembling.release(owners.a)
    assembling.release(owners.a)
    expect([assembling.bytes, assembling.bytesOf('device-1'), assembling.bytesOf('device-2')]).toEqual([27, 7, 20])
  })

  it('lets go of stalled messages by latest move, least recent first, as few as make room, never the one kept', () => {
    const assembling = new AssemblingMessages<object, string>(STALL_MS)
    const read = new Map<object, number>()
    assembling.added(owners.a, 'a', 'a', 1 << 20, 30, 0, 0)
    assembling.added(owners.b, 'b', 'b', 1 << 20, 30, 10, 0)
    assembling.added(owners.c, 'c', 'c', 1 << 20, 30, 20, 0)
    // a sends again: b is now the least recent.
    assembling.added(owners.a, 'a', 'a', 1 << 20, 10, 30, 0)
    const now = 30 + STALL_MS
    expect(assembling.stalled(10, 200, now, null, still(read))).toEqual([])
    expect(assembling.stalled(120, 200, now, null, still(read))).toEqual([['b', owners.b]])
    expect(assembling.stalled(150, 200, now, null, still(read))).toEqual([
      ['b', owners.b],
      ['c', owners.c],
    ])
    expect(assembling.stalled(120, 200, now, owners.b, still(read))).toEqual([['c', owners.c]])
    // 1 ms earlier a has not stalled: b and c alone cannot make room for 170, so none is let go.
    expect(assembling.stalled(170, 200, now - 1, null, still(read))).toBeNull()
    expect(assembling.stalled(170, 200, now, null, still(read))).toHaveLength(3)
  })

  it('a message whose socket keeps receiving is moving (a part on a slow link), and goes to the back', () => {
    const assembling = new AssemblingMessages<object, string>(STALL_MS)
    const read = new Map<object, number>([[owners.a, 1_000]])
    assembling.added(owners.a, 'a', 'a', 1 << 20, 50, 0, 1_000)
    assembling.added(owners.b, 'b', 'b', 1 << 20, 50, 0, 0)
    read.set(owners.a, 9_000)
    expect(assembling.stalled(50, 100, STALL_MS, null, still(read))).toEqual([['b', owners.b]])
    // Noticed moving at STALL_MS: stalled only STALL_MS after that, its socket quiet since.
    expect(assembling.stalled(100, 100, 2 * STALL_MS - 1, null, still(read))).toBeNull()
    expect(assembling.stalled(100, 100, 2 * STALL_MS, null, still(read))).toEqual([
      ['b', owners.b],
      ['a', owners.a],
    ])
  })

  it('a message kept alive by a trickle is overdue once stallMs plus its size at the slowest rate passed', () => {
    const assembling = new AssemblingMessages<object, string>(STALL_MS)
    const total = 64 << 10
    const due = STALL_MS + (total * 1000) / MIN_PART_BYTES_PER_SECOND
    let t = 0
    for (; t < due; t += STALL_MS - 1) assembling.added(owners.a, 'a', 'a', total, 1, t, t)
    const read = still(new Map([[owners.a, t - STALL_MS + 1]]))
    expect(assembling.stalled(1, 1, due - 1, null, read)).toBeNull()
    expect(assembling.stalled(1, 1, due, null, read)).toEqual([['a', owners.a]])
  })
})
