import type { EngineLimits, EngineOptions } from './engineApi.ts'
import { FixedWindowIndex } from '../windows/fixedWindowIndex.ts'
import { SessionWindowIndex } from '../windows/sessionWindowIndex.ts'
import { boundedOutOfOrderness, type WatermarkStrategy } from '../time/watermarkStrategy.ts'
import type { WindowIndex } from '../windows/windowIndex.ts'
import type { WindowSpec } from '../windows/windowSpec.ts'

/** Options with every default filled in and every value checked. */
export interface ResolvedOptions {
  readonly specs: readonly WindowSpec[]
  readonly watermark: WatermarkStrategy
  readonly idleTimeout: number
  readonly allowedLateness: number
  readonly retention: number
  readonly now: () => number
  readonly limits: Required<EngineLimits>
  readonly replicaId: string
  /** Corrections kept per window for `history()`. */
  readonly historyLimit: number
}

export const DEFAULT_LIMITS: Required<EngineLimits> = {
  maxWindows: 100_000,
  maxDedupEntries: 1_000_000,
  maxLateEvents: 10_000,
  maxSources: 100_000,
  maxBatch: 1_000_000,
}

function nonNegative(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new RangeError(`${name} must be a number >= 0 (Infinity allowed), got ${String(value)}`)
  }
  return value
}

/** Checks options and fills defaults; throws a RangeError or TypeError naming the bad option. */
export function resolveOptions(options: EngineOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError('createEngine needs an options object')
  const specs = (Array.isArray(options.windows) ? options.windows : [options.windows]) as WindowSpec[]
  if (specs.length === 0 || specs.some((s) => typeof s !== 'object' || s === null || typeof s.id !== 'string')) {
    throw new TypeError('options.windows must be a window spec or a non-empty array of them (tumbling, sliding, session)')
  }
  const ids = new Set(specs.map((s) => s.id))
  if (ids.size !== specs.length) throw new RangeError('options.windows has the same window spec twice')
  const limits = { ...DEFAULT_LIMITS }
  for (const name of Object.keys(DEFAULT_LIMITS) as (keyof EngineLimits)[]) {
    const given = options.limits?.[name]
    if (given !== undefined) {
      if (!Number.isInteger(given) || given < 0) throw new RangeError(`limits.${name} must be an integer >= 0`)
      limits[name] = given
    }
  }
  const allowedLateness = nonNegative('allowedLateness', options.allowedLateness, 0)
  if (!Number.isFinite(allowedLateness)) throw new RangeError('allowedLateness must be finite')
  return {
    specs,
    watermark: options.watermark ?? boundedOutOfOrderness(0),
    idleTimeout: nonNegative('idleTimeout', options.idleTimeout, Number.POSITIVE_INFINITY),
    allowedLateness,
    retention: nonNegative('retention', options.retention, 60_000),
    now: options.now ?? Date.now,
    replicaId: replicaIdOf(options.replicaId),
    limits,
    historyLimit: 64,
  }
}

/** One window index per spec. */
export function indexFor(spec: WindowSpec): WindowIndex {
  switch (spec.kind) {
    case 'tumbling':
      return new FixedWindowIndex(spec.id, spec.size, spec.size)
    case 'sliding':
      return new FixedWindowIndex(spec.id, spec.size, spec.slide)
    case 'session':
      return new SessionWindowIndex(spec.id, spec.gap)
    default:
      throw new TypeError(`unknown window spec ${JSON.stringify(spec)}`)
  }
}

function replicaIdOf(given: string | undefined): string {
  if (given !== undefined) {
    if (typeof given !== 'string' || given.length === 0 || given.length > 128) {
      throw new RangeError('replicaId must be a non-empty string of at most 128 characters')
    }
    return given
  }
  const random = (globalThis.crypto as Crypto | undefined)?.randomUUID?.()
  return random ?? `r-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`
}

/**
 * What replicas must agree on to merge: window specs and allowed lateness. Retention and
 * limits are local choices.
 */
export function configurationOf(options: ResolvedOptions): string {
  return JSON.stringify({ windows: options.specs.map((s) => s.id).sort(), allowedLateness: options.allowedLateness })
}
