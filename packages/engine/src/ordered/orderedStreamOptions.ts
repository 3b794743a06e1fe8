import type { OrderedStreamOptions } from './orderedStreamApi.ts'
import { maxFutureSkewOf } from '../input/futureSources.ts'
import { assertKnownOptions } from '../options/knownOptions.ts'
import { processingClock } from '../time/processingClock.ts'
import { boundedOutOfOrderness, checkWatermarkStrategy, type WatermarkStrategy } from '../time/watermarkStrategy.ts'

/** Ordered-stream options with every default filled in and every value checked. */
export interface ResolvedOrderedStreamOptions {
  readonly watermark: WatermarkStrategy
  readonly idleTimeout: number
  readonly allowedLateness: number
  readonly batchSize: number
  readonly onLate: 'emit_correction' | 'drop'
  readonly now: () => number
  readonly maxFutureSkew: number
  readonly maxPending: number
  readonly maxDedupEntries: number
  readonly maxLateEvents: number
  readonly maxSources: number
}

/** The keys `createOrderedStream` takes. */
const ORDERED_STREAM_OPTION_KEYS: readonly (keyof OrderedStreamOptions)[] = [
  'watermark',
  'idleTimeout',
  'allowedLateness',
  'batchSize',
  'onLate',
  'now',
  'maxFutureSkew',
  'maxPending',
  'maxDedupEntries',
  'maxLateEvents',
  'maxSources',
]

function count(name: string, value: number | undefined, fallback: number, min: number, why: string): number {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`${name} must be an integer >= ${min} (${why}), got ${String(value)}`)
  return value
}

/** Checks options and fills defaults; throws a RangeError or TypeError naming the bad option. */
export function resolveOrderedStreamOptions(options: OrderedStreamOptions = {}): ResolvedOrderedStreamOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError('createOrderedStream needs an options object')
  assertKnownOptions('createOrderedStream', options, ORDERED_STREAM_OPTION_KEYS)
  const idleTimeout = options.idleTimeout ?? Number.POSITIVE_INFINITY
  if (typeof idleTimeout !== 'number' || Number.isNaN(idleTimeout) || idleTimeout < 0) {
    throw new RangeError(`idleTimeout must be a number >= 0 of ms (Infinity: sources never turn idle), got ${String(idleTimeout)}`)
  }
  const allowedLateness = options.allowedLateness ?? 0
  if (typeof allowedLateness !== 'number' || !Number.isFinite(allowedLateness) || allowedLateness < 0) {
    throw new RangeError(
      `allowedLateness must be a finite number >= 0 of ms, got ${String(allowedLateness)}: state below W - allowedLateness is released, so it must be finite`,
    )
  }
  const onLate = options.onLate ?? 'emit_correction'
  if (onLate !== 'emit_correction' && onLate !== 'drop') throw new RangeError(`onLate must be 'emit_correction' or 'drop', got ${String(onLate)}`)
  // Each reading checked, as the engine checks it: one that is not a number throws before the call changes anything.
  const now = processingClock(options.now)
  return {
    watermark: options.watermark === undefined ? boundedOutOfOrderness(0) : checkWatermarkStrategy(options.watermark),
    idleTimeout,
    allowedLateness,
    batchSize: count('batchSize', options.batchSize, 1_000, 1, 'events per emitted batch'),
    onLate,
    now,
    maxFutureSkew: maxFutureSkewOf(options.maxFutureSkew),
    maxPending: count('maxPending', options.maxPending, 1_000_000, 1, 'with 0 every event would be refused'),
    maxDedupEntries: count('maxDedupEntries', options.maxDedupEntries, 1_000_000, 1, 'with 0 every event out of order or without seq would be refused'),
    maxLateEvents: count('maxLateEvents', options.maxLateEvents, 10_000, 0, '0 keeps no late events, only their count'),
    maxSources: count('maxSources', options.maxSources, 100_000, 1, 'with 0 every event would be refused'),
  }
}
