import { describe, expect, it } from 'vitest'
import { Fleet } from '../src/fleet/fleet.ts'
import { DEFAULT_SETTINGS, type FleetSettings, windowIdOf } from '../src/fleet/fleetSettings.ts'

const T0 = 1_800_000_000_000

/** A fleet on a fake clock; `advance(ms)` ticks it every 100 ms. */
function fakeFleet(settings: Partial<FleetSettings> = {}, intro = false) {
  const clock = { now: T0 }
  const fleet = new Fleet({ settings: { ...DEFAULT_SETTINGS, deviceCount: 6, ...settings }, now: () => clock.now, intro })
  const advance = (ms: number): void => {
    for (const end = clock.now + ms; clock.now < end; ) {
      clock.now += 100
      fleet.tick(clock.now)
    }
  }
  const device = (id: string) => fleet.snapshot().devices.find((d) => d.id === id)
  return { fleet, clock, advance, device }
}

describe('Fleet', () => {
  it('fills the dashboard engine with windows from every device', () => {
    const { fleet, advance } = fakeFleet()
    advance(20_000)
    const { dashboard, settings, devices } = fleet.snapshot()
    const fired = dashboard.results({ window: windowIdOf(settings), key: 'temp' }).filter((r) => r.status !== 'provisional')
    expect(fired.length).toBeGreaterThan(5)
    expect(dashboard.stats().sources).toBe(6)
    expect(devices.every((d) => d.online && d.lastSync !== null)).toBe(true)
  })

  it('plays the tour: the device queues while offline, then its backlog corrects windows and fills the late lane', () => {
    const { fleet, advance, device } = fakeFleet({}, true)
    const tour = fleet.snapshot().introDevice as string
    advance(12_000)
    expect(device(tour)).toMatchObject({ online: false })
    expect(device(tour)?.queued).toBeGreaterThan(0)
    advance(30_000)
    expect(device(tour)).toMatchObject({ online: true, queued: 0 })
    const stats = fleet.snapshot().dashboard.stats()
    expect(stats.corrections).toBeGreaterThan(0)
    expect(fleet.snapshot().dashboard.lateEvents().some((late) => late.event.source === tour)).toBe(true)
    expect(fleet.snapshot().introDevice).toBeNull()
  })

  it('delivers every reading exactly once through storms: what devices ingested is what the dashboard ingested', () => {
    const { fleet, advance } = fakeFleet({ deviceCount: 10 })
    advance(3_000)
    fleet.startStorm(15_000)
    advance(16_000)
    expect(fleet.snapshot().storm).toBeNull()
    fleet.setPaused(true)
    advance(6_000) // every upload and backlog landed
    const { dashboard, devices } = fleet.snapshot()
    expect(devices.every((d) => d.online && d.queued === 0 && d.inFlight === 0)).toBe(true)
    const stats = dashboard.stats()
    const local = devices.reduce((sum, d) => sum + d.accepted, 0)
    expect(stats.applied + stats.beyondLateness).toBe(local)
    expect(stats.finalityViolations).toBe(0)
  })

  it('loses the unsent queue in a crash (no WAL yet), reboots, and continues its seq', () => {
    const { fleet, advance, device } = fakeFleet()
    advance(5_000)
    fleet.setOnline('d02', false)
    advance(4_000)
    const queued = device('d02')?.queued ?? 0
    const seq = device('d02')?.seq ?? 0
    expect(queued).toBeGreaterThan(0)
    fleet.crash('d02')
    expect(device('d02')).toMatchObject({ phase: 'rebooting', queued: 0, crashes: 1 })
    expect(device('d02')?.lost).toBeGreaterThanOrEqual(queued)
    advance(3_000)
    expect(device('d02')?.phase).toBe('running')
    expect(device('d02')?.seq).toBeGreaterThan(seq)
  })

  it('after a crash that lost readings, no later window is proven complete: the seq gap stalls the proof frontier', () => {
    const { fleet, advance, device } = fakeFleet()
    advance(5_000)
    fleet.setOnline('d03', false)
    advance(3_000)
    fleet.crash('d03')
    expect(device('d03')?.lost).toBeGreaterThan(0)
    fleet.setOnline('d03', true)
    const crashedAt = fleet.snapshot().now
    advance(20_000)
    const { dashboard, settings } = fleet.snapshot()
    const later = dashboard
      .results({ window: windowIdOf(settings), key: 'temp', from: crashedAt + 2_000 })
      .filter((r) => r.status !== 'provisional')
    expect(later.length).toBeGreaterThan(3)
    expect(later.some((r) => r.basis === 'proven')).toBe(false)
    expect(dashboard.stats().proofFrontier).toBeLessThan(crashedAt)
  })

  it('stops producing while paused', () => {
    const { fleet, advance, device } = fakeFleet()
    advance(3_000)
    fleet.setPaused(true)
    advance(1_000) // uploads already in flight land
    const seq = device('d01')?.seq
    advance(10_000)
    expect(device('d01')?.seq).toBe(seq)
    fleet.setPaused(false)
    advance(2_000)
    expect((device('d01')?.seq ?? 0) - (seq ?? 0)).toBeLessThanOrEqual(15)
  })

  it('recreates every engine when settings change', () => {
    const { fleet, advance } = fakeFleet()
    advance(3_000)
    const before = fleet.snapshot()
    fleet.configure({ windowMs: 5_000, deviceCount: 9 })
    const after = fleet.snapshot()
    expect(after.dashboard).not.toBe(before.dashboard)
    expect(after.generation).toBe(before.generation + 1)
    expect(after.devices).toHaveLength(9)
    expect(after.dashboard.stats().ingested).toBe(0)
    advance(12_000)
    expect(after.dashboard.results({ window: 'tumbling:5000' }).length).toBeGreaterThan(0)
  })
})
