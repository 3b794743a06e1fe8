import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { StormTransition } from '../src/contract/stormPageApi.ts'
import type { NetworkSwitch } from '../src/driver/deviceNetwork.ts'
import { describeToggles, NetworkToggles } from '../src/driver/networkToggles.ts'
import { toggleSchedule } from '../src/driver/toggleSchedule.ts'

const START = 1_764_000_000_000

beforeEach(() => {
  vi.useFakeTimers({ now: START })
})
afterEach(() => {
  vi.useRealTimers()
})

/** A device whose page sees each switch `seenMs` after it was issued, and whose browser acknowledges it after `ackMs`. */
function device(seenMs: number, ackMs: number) {
  const seen: StormTransition[] = []
  const switchNetwork: NetworkSwitch = (offline) => {
    setTimeout(() => seen.push({ at: Date.now(), online: !offline }), seenMs)
    return new Promise<void>((resolve) => setTimeout(resolve, ackMs))
  }
  return { seen, switchNetwork }
}

describe('NetworkToggles', () => {
  it('issues the seeded schedule on time without awaiting acknowledgements, and measures each clock', async () => {
    const devices = [device(5, 30), device(10, 700)]
    const toggles = new NetworkToggles(
      devices.map((d) => d.switchNetwork),
      { seed: 42, intervalMs: [50, 500] },
    )
    const run = toggles.run(START + 5_000)
    await vi.advanceTimersByTimeAsync(6_000)
    await run
    for (const [k] of devices.entries()) {
      const schedule = toggleSchedule(42, k, [50, 500], 5_000)
      const issued = toggles.records.filter((r) => r.device === k)
      expect(issued.map((r) => r.offline)).toEqual(schedule.map((t) => t.offline))
      expect(issued.map((r) => r.dueAt - START)).toEqual(schedule.map((t) => expect.closeTo(t.atMs, 2)))
    }
    const figures = toggles.figures(devices.map((d) => d.seen))
    expect(figures.acknowledged).toBe(figures.issued)
    // Device 1 acknowledges after 700 ms, longer than any interval: awaiting would have stretched its schedule.
    expect(figures.perDevice[1]?.maxInFlight).toBeGreaterThan(1)
    expect(figures.issueLagMs.max).toBeLessThanOrEqual(1)
    expect(figures.ackMs.min).toBe(30)
    expect(figures.ackMs.max).toBe(700)
    expect(figures.observedLagMs.min).toBe(5)
    expect(figures.observedLagMs.max).toBe(10)
    expect(figures.observed).toBe(figures.issued)
    expect(describeToggles(figures)).toMatch(/^toggles: issued=\d+ acknowledged=\d+ seen by pages=\d+ \(per device issued\/seen\/max in flight: \d+\/\d+\/1 \d+\/\d+\/\d+\)\n {2}intended interval {2}n=/)
  })

  it('rejects run() when a switch fails', async () => {
    const toggles = new NetworkToggles([() => Promise.reject(new Error('target closed'))], { seed: 1, intervalMs: [50, 60] })
    const run = toggles.run(START + 200)
    const outcome = expect(run).rejects.toThrow('target closed')
    await vi.advanceTimersByTimeAsync(300)
    await outcome
  })
})
