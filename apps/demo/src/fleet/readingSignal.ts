import type { MetricKey } from './metrics.ts'
import type { Prng } from './prng.ts'

/**
 * What one device's sensors would read: a per-device baseline, a slow wave and
 * noise. Devices differ on purpose (one runs hot, one has a weak battery), so
 * a device that goes missing moves the fleet mean and its late readings make a
 * visible correction.
 */
export interface SensorBaseline {
  readonly temp: number
  readonly humidity: number
  /** Battery percentage at `since`. */
  readonly battery: number
  /** Radians; keeps devices' waves out of step. */
  readonly phase: number
  /** Time the battery level was `battery`. */
  readonly since: number
}

export function createSensorBaseline(rng: Prng, since: number): SensorBaseline {
  return {
    temp: rng.between(18, 30),
    humidity: rng.between(32, 68),
    battery: rng.between(35, 100),
    phase: rng.between(0, 2 * Math.PI),
    since,
  }
}

const TAU = 2 * Math.PI
const BATTERY_DRAIN_PER_SECOND = 0.02

/** The reading of `key` at device time `t`, with fresh noise from `rng`. */
export function sensorReading(baseline: SensorBaseline, key: MetricKey, t: number, rng: Prng): number {
  const noise = rng.between(-1, 1)
  switch (key) {
    case 'temp':
      return round(baseline.temp + 0.8 * Math.sin((TAU * t) / 45_000 + baseline.phase) + 0.3 * noise, 2)
    case 'humidity':
      return round(baseline.humidity + 3 * Math.sin((TAU * t) / 70_000 + baseline.phase) + noise, 1)
    case 'battery': {
      const drained = ((t - baseline.since) / 1000) * BATTERY_DRAIN_PER_SECOND
      return round(Math.max(3, baseline.battery - drained + 0.05 * noise), 2)
    }
  }
}

function round(value: number, digits: number): number {
  const scale = 10 ** digits
  return Math.round(value * scale) / scale
}
