/**
 * The relay's account of messages being received in parts: bytes across connections, and which
 * stalled messages to let go when a part would pass the cap.
 */
import { describe, expect, it } from 'vitest'
import { AssemblingMessages } from '../src/gate/messageParts.ts'

describe('AssemblingMessages', () => {
  const owners = { a: { name: 'a' }, b: { name: 'b' }, c: { name: 'c' } }

  it('counts bytes across owners, and lets go of an owner whole', () => {
    const assembling = new AssemblingMessages<object, string>()
    assembling.added(owners.a, 'a', 10, 0)
    assembling.added(owners.b, 'b', 20, 0)
    assembling.added(owners.a, 'a', 5, 1)
    expect(assembling.bytes).toBe(35)
    assembling.release(owners.a)
    expect(assembling.bytes).toBe(20)
    assembling.release(owners.a)
    expect(assembling.bytes).toBe(20)
  })

  it('chooses by latest part, least recent first, as few as make room; never the one kept', () => {
    const assembling = new AssemblingMessages<object, string>()
    assembling.added(owners.a, 'a', 30, 0)
    assembling.added(owners.b, 'b', 30, 10)
    assembling.added(owners.c, 'c', 30, 20)
    // a sends again: b is now the least recent.
    assembling.added(owners.a, 'a', 10, 30)
    expect(assembling.stalled(10, 200, 100, null)).toEqual([])
    expect(assembling.stalled(120, 200, 100, null)).toEqual([['b', owners.b]])
    expect(assembling.stalled(150, 200, 100, null)).toEqual([
      ['b', owners.b],
      ['c', owners.c],
    ])
    expect(assembling.stalled(120, 200, 100, owners.b)).toEqual([['c', owners.c]])
  })

  it('lets none go when those stalled long enough cannot make room', () => {
    const assembling = new AssemblingMessages<object, string>()
    assembling.added(owners.a, 'a', 50, 0)
    assembling.added(owners.b, 'b', 50, 50)
    // Only a has stalled since 10: its 50 bytes are not enough for 60 more under 100.
    expect(assembling.stalled(60, 100, 10, null)).toBeNull()
    expect(assembling.stalled(60, 100, 50, null)).toEqual([
      ['a', owners.a],
      ['b', owners.b],
    ])
  })
})
