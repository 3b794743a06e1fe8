import type { Prng } from './prng.ts'
import type { DeviceProfile } from './readingProducer.ts'

/** One device dropping off or coming back at a planned processing time. */
export interface Toggle {
  readonly at: number
  readonly device: string
  readonly online: boolean
}

export interface StormOptions {
  readonly durationMs: number
  /** Share of the fleet caught in the storm, 0..1 (at least one device). */
  readonly share: number
  /** Offline spells last between these, ms. */
  readonly offlineMs: readonly [number, number]
  /** Online spells between drops last between these, ms. */
  readonly onlineMs: readonly [number, number]
}

/**
 * Offline spells from half a second (the watermark waits: no correction) to six seconds
 * (longer than the dashboard's idle timeout: windows fire without the device, and its
 * catch-up corrects them), all shorter than the default allowed lateness.
 */
export const DEFAULT_STORM: Omit<StormOptions, 'durationMs'> = {
  share: 0.6,
  offlineMs: [500, 6_000],
  onlineMs: [300, 2_500],
}

/**
 * A reconnect storm: many devices drop off and come back at random for
 * `durationMs`. Per device the toggles alternate offline/online, and every
 * device is back online by `start + durationMs`, so a storm always ends with
 * the whole fleet connected (and every queue flushed).
 *
 * @example
 * planStorm(['d01', 'd02'], Date.now(), { ...DEFAULT_STORM, durationMs: 15_000 }, createPrng(7))
 */
export function planStorm(devices: readonly string[], start: number, options: StormOptions, rng: Prng): Toggle[] {
  const end = start + options.durationMs
  const caught = devices.filter(() => rng.chance(options.share))
  if (caught.length === 0 && devices.length > 0) caught.push(devices[rng.index(devices.length)] as string)
  const toggles: Toggle[] = []
  for (const device of caught) {
    let online = true
    let at = start + rng.between(0, options.onlineMs[1])
    while (at < end) {
      online = !online
      toggles.push({ at, device, online })
      const [min, max] = online ? options.onlineMs : options.offlineMs
      at += rng.between(min, max)
    }
    if (!online) toggles.push({ at: end, device, online: true })
  }
  return toggles.sort((a, b) => a.at - b.at)
}

/**
 * The first-minute tour: one device drops off shortly after the page opens and comes back
 * before its missing windows turn final. A newcomer sees the watermark move on without it
 * (windows fire `fallback`), then its document catch up and correct those windows. Staying
 * away longer than the allowed lateness would make the catch-up change final windows too
 * (finality violations); the tour leaves that to the operator.
 */
export function planIntro(device: string, start: number, allowedLatenessMs: number): Toggle[] {
  const offlineAt = start + 6_000
  return [
    { at: offlineAt, device, online: false },
    { at: offlineAt + Math.max(6_000, allowedLatenessMs / 2 + 4_000), device, online: true },
  ]
}

/** The device whose absence moves the fleet's mean temperature most, so its late readings make a visible correction. */
export function pickTourDevice(profiles: readonly DeviceProfile[]): string | undefined {
  const mean = profiles.reduce((sum, p) => sum + p.sensors.temp, 0) / Math.max(1, profiles.length)
  let pick: DeviceProfile | undefined
  for (const profile of profiles) {
    if (pick === undefined || Math.abs(profile.sensors.temp - mean) > Math.abs(pick.sensors.temp - mean)) pick = profile
  }
  return pick?.id
}
