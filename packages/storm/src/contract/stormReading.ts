/**
 * The readings a storm device ingests. A reading is a pure function of the page's seed, its
 * source and its seq, the same in every browser and in Node, so the driver recomputes every
 * event a device says it produced and derives the ground truth without trusting any engine.
 */
import type { StreamEvent } from '@tidemark/engine'

/**
 * Reading `seq` (1, 2, …) of `source` on a page opened with `seed`: always the same event.
 *
 * @example
 * const reading: StormReading = (seed, source, seq) => ({ id: `${source}#${seq}`, source, seq, ts: seq * 10, key: 'k', value: 1 })
 */
export type StormReading = (seed: number, source: string, seq: number) => StreamEvent

/**
 * How `stragglingReadings` lays out event time, keys and values.
 *
 * @example
 * const options: StragglingReadingsOptions = { stepMs: 10, stragglerEvery: 20, maxBehindMs: 9_000 }
 */
export interface StragglingReadingsOptions {
  /** Event time of seq 0; default 1,700,000,000,000. */
  readonly t0?: number
  /** Event time between consecutive seqs, ms; default 10. */
  readonly stepMs?: number
  /** About one reading in this many is a straggler; default 20. */
  readonly stragglerEvery?: number
  /** A straggler is up to this many ms behind its seq's time; default 9,000 (3 × (lateness 2,000 + window 1,000)). */
  readonly maxBehindMs?: number
  /** Keys `k0..k<keys-1>`, by seq; default 4. */
  readonly keys?: number
  /** Values `1..values`, by seq; default 7. */
  readonly values?: number
}

/** A 32-bit mix of `seed` and `seq` (a Murmur3 finalizer), the same in every browser and in Node. */
function mix(seed: number, seq: number): number {
  let h = (seed ^ Math.imul(seq, 0x9e3779b1)) >>> 0
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0
  return (h ^ (h >>> 16)) >>> 0
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError(`stragglingReadings: ${name} must be a positive integer, got ${value}`)
  return value
}

/**
 * Readings on a steady event-time clock (`t0 + seq × stepMs`) where about one in
 * `stragglerEvery` arrives up to `maxBehindMs` behind it: with a window and lateness smaller
 * than that, some land on the late lane. Which readings straggle depends on `seed` and `seq`
 * only, so a seed replays its readings whatever source names the pages claim.
 *
 * @example
 * const reading = stragglingReadings({ maxBehindMs: 3 * (2_000 + 1_000) })
 * reading(7, 'device-a1', 1) // { id: 'device-a1#1', source: 'device-a1', seq: 1, ts: 1700000000010, key: 'k1', value: 2 }
 */
export function stragglingReadings(options: StragglingReadingsOptions = {}): StormReading {
  const t0 = options.t0 ?? 1_700_000_000_000
  if (!Number.isSafeInteger(t0)) throw new RangeError(`stragglingReadings: t0 must be an integer, got ${t0}`)
  const stepMs = positiveInteger('stepMs', options.stepMs ?? 10)
  const stragglerEvery = positiveInteger('stragglerEvery', options.stragglerEvery ?? 20)
  const maxBehindMs = positiveInteger('maxBehindMs', options.maxBehindMs ?? 9_000)
  const keys = positiveInteger('keys', options.keys ?? 4)
  const values = positiveInteger('values', options.values ?? 7)
  return (seed, source, seq) => {
    const h = mix(seed, seq)
    let ts = t0 + seq * stepMs
    if (h % stragglerEvery === 0) ts -= (h >>> 8) % maxBehindMs
    return { id: `${source}#${seq}`, source, seq, ts, key: `k${seq % keys}`, value: (seq % values) + 1 }
  }
}

/**
 * The default readings (`stragglingReadings()` with its defaults): made for pages with a
 * 1 s tumbling window and 2 s allowed lateness, where a few percent go to the late lane.
 *
 * @example
 * stormReading(7, 'device-a1', 1).ts // 1700000000010
 */
export const stormReading: StormReading = stragglingReadings()
