import type { Engine, StreamEvent } from '@tidemark/engine'
import type { Prng } from './prng.ts'
import { type DeviceProfile, type ProducerFaults, ReadingProducer } from './readingProducer.ts'
import { createSensorBaseline } from './readingSignal.ts'

export type DevicePhase = 'running' | 'rebooting'

/** What a device's own engine made of its uploads, and what crashes cost it. */
export interface DeviceCounters {
  readonly uploads: number
  readonly accepted: number
  readonly duplicates: number
  readonly rejected: number
  /** Readings lost in crashes (sampled but not uploaded; no write-ahead log yet). */
  readonly lost: number
  readonly crashes: number
}

/** A device of the fleet, `d01`, `d02`, …, with a clock that is off by up to ±1.5 s. */
export function createDeviceProfile(index: number, rng: Prng, now: number): DeviceProfile {
  return {
    id: `d${String(index + 1).padStart(2, '0')}`,
    skewMs: Math.round(rng.between(-1_500, 1_500)),
    sampleEveryMs: 500,
    uploadEveryMs: 1_000,
    sensors: createSensorBaseline(rng, now),
  }
}

/**
 * One simulated device: a reading producer plus its own engine (its own
 * source), which ingests every upload before the link sends it on.
 *
 * A crash drops the engine and the readings sampled but not uploaded yet.
 * The device keeps only its seq counter (as an app would in localStorage),
 * so after the reboot it continues its sequence, and the dashboard sees the
 * lost readings as a gap in it.
 */
export class Device {
  readonly profile: DeviceProfile
  readonly #faults: ProducerFaults
  readonly #rng: Prng
  readonly #makeEngine: () => Engine
  #engine: Engine | null
  #producer: ReadingProducer
  #rebootUntil = Number.NEGATIVE_INFINITY
  #reboots = 0
  #counters: { -readonly [K in keyof DeviceCounters]: DeviceCounters[K] } = {
    uploads: 0,
    accepted: 0,
    duplicates: 0,
    rejected: 0,
    lost: 0,
    crashes: 0,
  }

  constructor(profile: DeviceProfile, faults: ProducerFaults, rng: Prng, makeEngine: () => Engine, now: number) {
    this.profile = profile
    this.#faults = faults
    this.#rng = rng
    this.#makeEngine = makeEngine
    this.#engine = makeEngine()
    this.#producer = new ReadingProducer(profile, faults, rng, now)
  }

  get id(): string {
    return this.profile.id
  }

  get phase(): DevicePhase {
    return this.#engine === null ? 'rebooting' : 'running'
  }

  /** Its own engine, or null while rebooting. */
  get engine(): Engine | null {
    return this.#engine
  }

  /** The last seq the device stamped. */
  get seq(): number {
    return this.#producer.seq
  }

  /** Times the device came back from a crash. */
  get reboots(): number {
    return this.#reboots
  }

  get counters(): DeviceCounters {
    return this.#counters
  }

  /**
   * Advances the device to `now`: finishes a due reboot, samples (when
   * `producing`), and ingests a due upload into its own engine. Returns that
   * upload for the link, or null.
   */
  step(now: number, producing: boolean): readonly StreamEvent[] | null {
    if (this.#engine === null) {
      if (now < this.#rebootUntil) return null
      this.#engine = this.#makeEngine()
      this.#reboots++
      this.#producer = new ReadingProducer(this.profile, this.#faults, this.#rng, now, this.#producer.seq)
    }
    if (!producing) return null
    const upload = this.#producer.poll(now)
    if (upload === null) return null
    const receipt = this.#engine.ingest(upload)
    this.#counters.uploads++
    this.#counters.accepted += receipt.accepted
    this.#counters.duplicates += receipt.duplicates
    this.#counters.rejected += receipt.rejected
    return upload
  }

  /** Producing again after a pause: no catch-up burst for the time spent paused. */
  resume(now: number): void {
    this.#producer.resume(now)
  }

  /**
   * Kills the device: its engine and unsent readings are gone; it reboots
   * after `rebootMs`. `alsoLost` counts what the caller lost with it (the
   * link's queue). Returns the readings lost on the device itself.
   */
  crash(now: number, rebootMs: number, alsoLost = 0): number {
    const lost = this.#producer.buffered
    void this.#engine?.close()
    this.#engine = null
    this.#rebootUntil = now + rebootMs
    this.#counters.lost += lost + alsoLost
    this.#counters.crashes++
    return lost
  }

  close(): void {
    void this.#engine?.close()
    this.#engine = null
  }
}
