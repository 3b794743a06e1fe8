/**
 * The seeded schedule of one device's network toggles: intervals drawn uniformly from
 * `[min, max)` ms by a generator seeded per device, independent of timing, so a seed replays
 * the same schedule however the run went.
 */
import { seeded } from './seeded.ts'

/**
 * One scheduled toggle, relative to the start of the storm.
 *
 * @example
 * const first: ScheduledToggle = { offline: true, intervalMs: 273.4, atMs: 273.4 }
 */
export interface ScheduledToggle {
  /** Offline (true) or back online (false); the first toggle takes the device offline. */
  readonly offline: boolean
  /** The drawn interval before it, ms. */
  readonly intervalMs: number
  /** Due time, ms after the start: the sum of the intervals so far. */
  readonly atMs: number
}

/**
 * Checks an interval range: `0 < min <= max`, both finite; returns it.
 *
 * @example
 * toggleRange([50, 500]) // [50, 500]
 * toggleRange([0, 500])  // throws RangeError
 */
export function toggleRange(intervalMs: readonly [number, number]): readonly [number, number] {
  const [min, max] = intervalMs
  if (!(Number.isFinite(min) && Number.isFinite(max) && min > 0 && max >= min)) {
    throw new RangeError(`storm toggles: the interval range must be [min, max] ms with 0 < min <= max, got [${min}, ${max}]`)
  }
  return intervalMs
}

/**
 * The intervals of device `device` (0, 1, …) under `seed`, one per call.
 *
 * @example
 * const next = toggleIntervals(42, 0, [50, 500])
 * next() // the same first interval on every run with seed 42
 */
export function toggleIntervals(seed: number, device: number, intervalMs: readonly [number, number]): () => number {
  const [min, max] = toggleRange(intervalMs)
  const random = seeded(seed * 1_000 + device + 1)
  return () => min + random() * (max - min)
}

/**
 * Every toggle of device `device` due before `durationMs`, in order.
 *
 * @example
 * toggleSchedule(42, 0, [50, 500], 1_000) // [{ offline: true, intervalMs: …, atMs: … }, { offline: false, … }, …]
 */
export function toggleSchedule(seed: number, device: number, intervalMs: readonly [number, number], durationMs: number): ScheduledToggle[] {
  const next = toggleIntervals(seed, device, intervalMs)
  const schedule: ScheduledToggle[] = []
  let atMs = 0
  for (;;) {
    const interval = next()
    atMs += interval
    if (atMs >= durationMs) return schedule
    schedule.push({ offline: schedule.length % 2 === 0, intervalMs: interval, atMs })
  }
}
