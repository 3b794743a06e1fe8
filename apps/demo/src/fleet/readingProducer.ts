import type { StreamEvent } from '@tidemark/engine'
import { uploadStampedId } from './fleetAggregates.ts'
import { deviceIdOf } from './fleetSettings.ts'
import { METRICS } from './metrics.ts'
import { createPrng, type Prng } from './prng.ts'
import { createSensorBaseline, type SensorBaseline, sensorReading } from './readingSignal.ts'

/** Who a simulated device is: its clock error, cadence and sensors. */
export interface DeviceProfile {
  readonly id: string
  /** Device clock minus true time, ms: every reading it stamps is off by this much. */
  readonly skewMs: number
  readonly sampleEveryMs: number
  readonly uploadEveryMs: number
  readonly sensors: SensorBaseline
}

/**
 * Fleet slot `index` of the fleet seeded with `seed`: its id (`d01`, …), a clock off by up
 * to ±1.5 s, and its own random stream. The same slot and seed give the same device in
 * every page, so a `?device=` tab runs exactly the device the dashboard would have run.
 *
 * @example
 * const { profile, rng } = createDeviceProfile(6, DEFAULT_SETTINGS.seed, Date.now()) // d07
 * const producer = new ReadingProducer(profile, DEFAULT_FAULTS, rng, Date.now())
 */
export function createDeviceProfile(index: number, seed: number, now: number): { profile: DeviceProfile; rng: Prng } {
  const rng = createPrng(seed * 7 + index * 7_919)
  const profile: DeviceProfile = {
    id: deviceIdOf(index),
    skewMs: Math.round(rng.between(-1_500, 1_500)),
    sampleEveryMs: 500,
    uploadEveryMs: 1_000,
    sensors: createSensorBaseline(rng, now),
  }
  return { profile, rng }
}

/** How badly a device behaves. */
export interface ProducerFaults {
  /**
   * Largest timing jitter of a sample, ms. Kept below half the sample period,
   * so a device's own timestamps never run backwards along `seq` and its
   * readings can still prove windows complete.
   */
  readonly jitterMs: number
  /** Chance that an upload re-sends readings it already sent (a retried request). */
  readonly duplicateRate: number
  /** Chance that an upload carries one malformed record. */
  readonly invalidRate: number
}

export const DEFAULT_FAULTS: ProducerFaults = { jitterMs: 120, duplicateRate: 0.06, invalidRate: 0.03 }

/** Ways a firmware bug or a sensor glitch breaks a record. */
const MALFORMED = ['ts', 'value', 'id', 'infinite'] as const

/**
 * The readings of one device: samples every metric at its own cadence, stamps
 * them with its own (skewed, jittery) clock and a gap-free `seq`, and hands
 * them out in uploads. Uploads sometimes repeat readings (duplicates) or carry
 * a malformed record. Malformed records carry no `seq`: they are not readings
 * the device counted, so they never open a gap in its sequence.
 *
 * Time is passed in (`poll(now)`), so a test drives it with a fake clock.
 */
export class ReadingProducer {
  readonly profile: DeviceProfile
  /** The source its readings are of: the device's id, or a later source of it (`nextDeviceSource`). */
  readonly source: string
  readonly #faults: ProducerFaults
  readonly #rng: Prng
  #seq: number
  #nextSampleAt: number
  #nextUploadAt: number
  #buffer: StreamEvent[] = []
  #lastUpload: readonly StreamEvent[] = []
  #malformed = 0

  /** `lastSeq` is the last seq the device already used in `source` (0 for a new source). */
  constructor(profile: DeviceProfile, faults: ProducerFaults, rng: Prng, now: number, lastSeq = 0, source = profile.id) {
    this.profile = profile
    this.source = source
    this.#faults = faults
    this.#rng = rng
    this.#seq = lastSeq
    this.#nextSampleAt = now
    this.#nextUploadAt = now + rng.between(0, profile.uploadEveryMs)
  }

  /** The last seq stamped on a reading. */
  get seq(): number {
    return this.#seq
  }

  /** Readings sampled but not uploaded yet. */
  get buffered(): number {
    return this.#buffer.length
  }

  /** Samples everything due by true time `now`; returns an upload when one is due, else null. */
  poll(now: number): StreamEvent[] | null {
    this.#sampleUntil(now)
    if (now < this.#nextUploadAt) return null
    this.#nextUploadAt = now + this.profile.uploadEveryMs + this.#rng.between(-0.2, 0.2) * this.profile.uploadEveryMs
    if (this.#buffer.length === 0) return null
    const readings = this.#stamped(now)
    const upload: StreamEvent[] = []
    if (this.#lastUpload.length > 0 && this.#rng.chance(this.#faults.duplicateRate)) {
      upload.push(...this.#lastUpload.slice(0, 1 + this.#rng.index(3)))
    }
    upload.push(...readings)
    if (this.#rng.chance(this.#faults.invalidRate)) upload.push(this.#malformedRecord(now))
    this.#lastUpload = readings
    return upload
  }

  /**
   * The last upload before a clean shutdown, at `now`: samples what is due by then (unless
   * `paused`: nothing new), then hands out everything buffered at once, due or not, with no
   * faults. Null when nothing is buffered. A device handed to another page before its first
   * upload thus still logs what it sampled, and the next page continues after that seq.
   */
  flush(now: number, paused = false): StreamEvent[] | null {
    if (!paused) this.#sampleUntil(now)
    if (this.#buffer.length === 0) return null
    const readings = this.#stamped(now)
    this.#lastUpload = readings
    return readings
  }

  /** The buffered readings, taken out, each id stamped with the upload's time on the device's clock (`uploadStampedId`). */
  #stamped(now: number): StreamEvent[] {
    const uploadedAt = Math.round(now + this.profile.skewMs)
    const readings = this.#buffer.map((reading) => ({ ...reading, id: uploadStampedId(reading.id, uploadedAt) }))
    this.#buffer = []
    return readings
  }

  /** Forgets the time spent paused: sampling restarts at `now` instead of catching up. */
  resume(now: number): void {
    this.#nextSampleAt = Math.max(this.#nextSampleAt, now)
    this.#nextUploadAt = Math.max(this.#nextUploadAt, now)
  }

  #sampleUntil(now: number): void {
    while (this.#nextSampleAt <= now) {
      this.#sample(this.#nextSampleAt)
      this.#nextSampleAt += this.profile.sampleEveryMs
    }
  }

  #sample(at: number): void {
    const { skewMs, sensors } = this.profile
    const id = this.source
    const jitter = this.#rng.between(-1, 1) * Math.min(this.#faults.jitterMs, this.profile.sampleEveryMs / 2 - 1)
    const ts = Math.round(at + skewMs + jitter)
    for (const metric of METRICS) {
      const seq = ++this.#seq
      this.#buffer.push({ id: `${id}-${seq}`, source: id, seq, ts, key: metric.key, value: sensorReading(sensors, metric.key, ts, this.#rng) })
    }
  }

  #malformedRecord(now: number): StreamEvent {
    const { skewMs } = this.profile
    const id = this.source
    const n = ++this.#malformed
    const kind = MALFORMED[this.#rng.index(MALFORMED.length)] ?? 'value'
    const ts = Math.round(now + skewMs)
    const base = { id: `${id}-bad-${n}`, source: id, ts, key: 'temp', value: 0 }
    switch (kind) {
      case 'ts':
        return { ...base, ts: Number.NaN }
      case 'value':
        return { ...base, value: Number.NaN }
      case 'id':
        return { ...base, id: '' }
      case 'infinite':
        return { ...base, value: Number.POSITIVE_INFINITY }
    }
  }
}
