import { describe, expect, it } from 'vitest'
import { DEFAULT_STORM, planIntro, planStorm, type Toggle } from '../src/fleet/connectivityPlan.ts'
import { createPrng } from '../src/fleet/prng.ts'
import { ToggleSchedule } from '../src/fleet/toggleSchedule.ts'

const T0 = 1_800_000_000_000
const devices = Array.from({ length: 24 }, (_, i) => `d${i + 1}`)

describe('planStorm', () => {
  const seed = 11
  const storm = planStorm(devices, T0, { ...DEFAULT_STORM, durationMs: 20_000 }, createPrng(seed))

  it('toggles many devices, inside the storm, in time order', () => {
    const caught = new Set(storm.map((toggle) => toggle.device))
    expect(caught.size).toBeGreaterThan(devices.length / 3)
    for (const toggle of storm) {
      expect(toggle.at).toBeGreaterThanOrEqual(T0)
      expect(toggle.at).toBeLessThanOrEqual(T0 + 20_000)
    }
    expect(storm.map((toggle) => toggle.at)).toEqual([...storm.map((toggle) => toggle.at)].sort((a, b) => a - b))
  })

  it('alternates offline and online per device, starting offline and ending online', () => {
    const perDevice = new Map<string, Toggle[]>()
    for (const toggle of storm) perDevice.set(toggle.device, [...(perDevice.get(toggle.device) ?? []), toggle])
    for (const [device, toggles] of perDevice) {
      toggles.forEach((toggle, i) => {
        expect(toggle.online, `${device} toggle ${i}`).toBe(i % 2 === 1)
      })
      expect(toggles.at(-1)?.online, device).toBe(true)
    }
  })

  it('is reproducible from its seed, and always catches at least one device', () => {
    expect(planStorm(devices, T0, { ...DEFAULT_STORM, durationMs: 20_000 }, createPrng(seed))).toEqual(storm)
    const lone = planStorm(['d1'], T0, { ...DEFAULT_STORM, share: 0, durationMs: 5_000 }, createPrng(3))
    expect(lone.length).toBeGreaterThanOrEqual(2)
  })
})

describe('planStorm: the README\'s reconnect storm', () => {
  it('catches about 60% of the devices, each offline 0.5–6 s at a time (the last spell cut short by the end), and all online at its end', () => {
    const fleet = Array.from({ length: 400 }, (_, i) => `d${i + 1}`)
    const durationMs = 60_000
    const toggles = planStorm(fleet, T0, { ...DEFAULT_STORM, durationMs }, createPrng(5))
    const caught = new Set(toggles.map((toggle) => toggle.device))
    expect(caught.size / fleet.length).toBeGreaterThan(0.55)
    expect(caught.size / fleet.length).toBeLessThan(0.65)
    const wentOffline = new Map<string, number>()
    for (const { at, device, online } of toggles) {
      if (!online) {
        wentOffline.set(device, at)
        continue
      }
      const spell = at - (wentOffline.get(device) as number)
      expect(spell, device).toBeLessThanOrEqual(6_000)
      if (at < T0 + durationMs) expect(spell, device).toBeGreaterThanOrEqual(500)
      wentOffline.delete(device)
    }
    expect(wentOffline.size).toBe(0)
  })
})

describe('planIntro', () => {
  it('keeps its device offline long enough for windows to fire without it, and brings it back within the allowed lateness', () => {
    const [off, on] = planIntro('d3', T0, 10_000)
    expect(off).toMatchObject({ device: 'd3', online: false, at: T0 + 6_000 })
    expect(on).toMatchObject({ device: 'd3', online: true })
    const away = (on?.at ?? 0) - (off?.at ?? 0)
    expect(away).toBeGreaterThanOrEqual(6_000)
    expect(away).toBeLessThan(10_000)
    expect(planIntro('d3', T0, 60_000)[1]?.at).toBe(T0 + 6_000 + 34_000)
  })
})

describe('ToggleSchedule', () => {
  it('hands out each due toggle once, in order', () => {
    const schedule = new ToggleSchedule('storm', [
      { at: 10, device: 'a', online: false },
      { at: 20, device: 'b', online: false },
      { at: 30, device: 'a', online: true },
    ])
    expect(schedule.due(5)).toEqual([])
    expect(schedule.due(20).map((toggle) => toggle.device)).toEqual(['a', 'b'])
    expect(schedule.due(25)).toEqual([])
    expect(schedule.done).toBe(false)
    expect(schedule.due(100)).toHaveLength(1)
    expect(schedule.done).toBe(true)
    expect(schedule.endsAt).toBe(30)
  })
})
