/**
 * `RelayHearing`, on rooms whose sync status the test sets, read as the dashboard's host reads
 * it (every reading of its clock): when the dashboard's clock may judge a device idle.
 */
import type { SyncStatus } from '@tidemark/engine'
import { describe, expect, it } from 'vitest'
import { RelayHearing } from '../src/fleet/relayHearing.ts'
import { DEVICE_RECONNECT_BOUND_MS } from '../src/fleet/relayReconnect.ts'

const IDLE_TIMEOUT_MS = 3_000
const IN_SYNC: SyncStatus = { state: 'connected', lastSync: 0, pendingLocalUpdates: 0, peers: 0, refusal: null }

function world(names: readonly string[]) {
  const clock = { now: 1_000 }
  const rooms = new Map<string, SyncStatus>(names.map((room) => [room, { ...IN_SYNC, lastSync: clock.now }]))
  const set = (room: string, status: Partial<SyncStatus>): void => {
    rooms.set(room, { ...(rooms.get(room) ?? IN_SYNC), ...status })
  }
  const hearing = new RelayHearing(() => rooms, () => clock.now, { liveMs: IDLE_TIMEOUT_MS })
  expect(hearing.hears()).toBe(true)
  /** `room`'s device is heard: its update lands in the room while in sync, and the host reads its clock. */
  const heard = (...heardRooms: string[]): boolean => {
    for (const room of heardRooms) set(room, { lastSync: clock.now })
    return hearing.hears()
  }
  /** The dashboard's link drops, and 18 s later every room syncs again (the relay restarted). */
  const gap = (): void => {
    for (const room of rooms.keys()) set(room, { state: 'offline' })
    expect(hearing.hears()).toBe(false)
    clock.now += 18_000
    for (const room of rooms.keys()) set(room, { state: 'connected', lastSync: clock.now })
  }
  /** Every device heard a second later, then `gap()`, and the host's first reading after it: not hearing yet. */
  const outage = (): void => {
    clock.now += 1_000
    heard(...names)
    gap()
    expect(hearing.hears()).toBe(false)
  }
  return { clock, set, hearing, gap, heard, outage }
}

describe('RelayHearing', () => {
  it('hears while every room is in sync, and not while one is not; a room just listed is no gap', () => {
    const { hearing, set } = world(['f/d01', 'f/d02'])
    set('f/d02', { state: 'connecting' })
    expect(hearing.hears()).toBe(false)
    set('f/d03', { state: 'connecting', lastSync: null })
    set('f/d02', { state: 'connected' })
    expect(hearing.hears()).toBe(false)
    set('f/d03', { state: 'connected', lastSync: 1_000 })
    expect(hearing.hears()).toBe(true)
  })

  it('after its link came back, awaits every device it heard just before, until each is heard again', () => {
    const { clock, hearing, outage, heard } = world(['f/d01', 'f/d02', 'f/d03'])
    // In sync again, but no device has reconnected yet: their silence is the outage's.
    outage()
    clock.now += 300
    expect(heard('f/d01', 'f/d03')).toBe(false)
    expect(hearing.awaiting()).toEqual({ rooms: ['f/d02'], until: clock.now - 300 + DEVICE_RECONNECT_BOUND_MS })
    clock.now += 4_000
    expect(heard('f/d02')).toBe(true)
    expect(hearing.awaiting()).toBeNull()
  })

  it('a device that is not back within the reconnect bound is no longer awaited: its silence counts from there', () => {
    const { clock, hearing, outage, heard } = world(['f/d01', 'f/d02'])
    outage()
    expect(heard('f/d01')).toBe(false)
    clock.now += DEVICE_RECONNECT_BOUND_MS - 1
    expect(hearing.hears()).toBe(false)
    clock.now += 1
    expect(hearing.hears()).toBe(true)
  })

  it('a device already silent for the idle timeout when the link went is not awaited, nor is a refused room', () => {
    const { clock, hearing, gap, heard, set } = world(['f/d01', 'f/d02', 'f/d03'])
    clock.now += 1_000
    heard('f/d01', 'f/d02', 'f/d03')
    set('f/d03', { state: 'offline', refusal: 'tidemark:bad-signature' })
    clock.now += IDLE_TIMEOUT_MS
    heard('f/d01')
    clock.now += 1
    gap()
    set('f/d03', { state: 'offline', refusal: 'tidemark:bad-signature' })
    expect(hearing.hears()).toBe(false)
    expect(hearing.awaiting()?.rooms).toEqual(['f/d01'])
    clock.now += 500
    expect(heard('f/d01')).toBe(true)
  })

  it('the sync exchange of the way back is not the device: only what comes after it counts', () => {
    const { clock, hearing, set, heard } = world(['f/d01', 'f/d02'])
    clock.now += 1_000
    heard('f/d01', 'f/d02')
    set('f/d01', { state: 'offline' })
    set('f/d02', { state: 'offline' })
    expect(hearing.hears()).toBe(false)
    clock.now += 5_000
    set('f/d01', { state: 'connected', lastSync: clock.now })
    expect(hearing.hears()).toBe(false)
    clock.now += 100
    set('f/d02', { state: 'connected', lastSync: clock.now })
    expect(hearing.hears()).toBe(false)
    clock.now += 100
    // d01's room synced a reading earlier, d02's just now: each needs an update after its exchange.
    expect(heard('f/d01')).toBe(false)
    clock.now += 800
    expect(heard('f/d02')).toBe(true)
  })

  it('the link lost again while awaiting: the devices still awaited are awaited again after it', () => {
    const { clock, hearing, gap, heard, outage } = world(['f/d01', 'f/d02'])
    outage()
    clock.now += 200
    heard('f/d01')
    clock.now += 1_000
    heard('f/d01')
    gap()
    expect(hearing.hears()).toBe(false)
    // d02, still awaited, and d01, heard a second before.
    expect([...(hearing.awaiting()?.rooms ?? [])].sort()).toEqual(['f/d01', 'f/d02'])
  })

  it('a link that keeps flapping awaits a device that never comes back for its reconnect bound in all, not again at every return', () => {
    const { clock, hearing, set, heard, outage } = world(['f/d01', 'f/d02'])
    // d02 is switched off during the outage; d01 is back at once and uploads every second.
    outage()
    let heardAgain = false
    for (let flap = 0; flap < 10 && !heardAgain; flap++) {
      // The link stays up 5 s (under the 7 s bound), then drops for 1 s and syncs again.
      for (let s = 0; s < 5 && !heardAgain; s++) {
        clock.now += 1_000
        heardAgain = heard('f/d01')
      }
      if (heardAgain) break
      set('f/d01', { state: 'offline' })
      set('f/d02', { state: 'offline' })
      expect(hearing.hears()).toBe(false)
      clock.now += 1_000
      set('f/d01', { state: 'connected', lastSync: clock.now })
      set('f/d02', { state: 'connected', lastSync: clock.now })
      hearing.hears()
    }
    // 7 s of the link up after the first return (5 s, a drop, 2 s more): d02's silence counts from there.
    expect(heardAgain).toBe(true)
    expect(clock.now).toBe(1_000 + 1_000 + 18_000 + 5_000 + 1_000 + 2_000)
  })

  it('measures a device\'s silence on the clock the engine judges idleness on: heard while that clock stood still, it is live at the next loss', () => {
    const { clock, hearing, gap, heard, outage } = world(['f/d01', 'f/d02'])
    // d01 is back at once; d02 only 3.5 s later: the dashboard's clock stands still meanwhile.
    outage()
    clock.now += 200
    expect(heard('f/d01')).toBe(false)
    clock.now += 3_500
    expect(heard('f/d02')).toBe(true)
    // The link drops at once again: d01 was silent 3.7 s by the host's clock, but 0 s by the engine's.
    gap()
    expect(hearing.hears()).toBe(false)
    expect([...(hearing.awaiting()?.rooms ?? [])].sort()).toEqual(['f/d01', 'f/d02'])
  })
})
