import { boundedOutOfOrderness, type EngineOptions, tumbling, type WindowSpec } from '@tidemark/engine'
import { type FleetAggregates, fleetAggregates } from './fleetAggregates.ts'

/**
 * What the control bar can change. The window and the allowed lateness make the epoch (engines
 * of other epochs cannot merge): changing them reopens every engine. The others reopen the
 * dashboard engine only.
 */
export interface FleetSettings {
  readonly deviceCount: number
  readonly windowMs: number
  readonly allowedLatenessMs: number
  /** Bounded out-of-orderness of the watermark. */
  readonly outOfOrdernessMs: number
  /** Processing time after which a silent device stops holding the dashboard's watermark back. */
  readonly idleTimeoutMs: number
  readonly seed: number
}

export const DEFAULT_SETTINGS: FleetSettings = {
  deviceCount: 12,
  windowMs: 2_000,
  allowedLatenessMs: 10_000,
  outOfOrdernessMs: 1_000,
  idleTimeoutMs: 3_000,
  seed: 20_261_129,
}

export const MAX_DEVICES = 64

/** Windows the dashboard keeps on screen per chart. */
export const CHART_WINDOWS = 40

/**
 * The fleet's window spec: tumbling windows of `windowMs`, on every engine of the epoch.
 *
 * @example
 * windowStart(windowSpecOf(DEFAULT_SETTINGS), Date.now()) // start of the 2 s window holding now
 */
export function windowSpecOf(settings: FleetSettings): WindowSpec {
  return tumbling(settings.windowMs)
}

/** The id the engine gives the fleet's window spec, e.g. `tumbling:2000`. */
export function windowIdOf(settings: FleetSettings): string {
  return windowSpecOf(settings).id
}

/**
 * The version of the fleet's aggregates (`fleetAggregates`), part of the epoch: engines with
 * other aggregates cannot merge, so logs and rooms written with other ones are never met.
 */
const AGGREGATES_VERSION = 'a1'

/**
 * Which replicas can merge: engines of one epoch share window spec, allowed lateness and
 * aggregates (the engine's configuration fingerprint). Rooms, channels and databases are named
 * after it, so a peer running other settings is never even met.
 *
 * @example
 * epochOf(DEFAULT_SETTINGS) // 'w2000-l10000-a1'
 */
export function epochOf(settings: FleetSettings): string {
  return `w${settings.windowMs}-l${settings.allowedLatenessMs}-${AGGREGATES_VERSION}`
}

/** Device id of fleet slot `index`: `d01`, `d02`, … */
export function deviceIdOf(index: number): string {
  return `d${String(index + 1).padStart(2, '0')}`
}

/** Slot index of a device id (`d07` → 6), or null for an id that names no slot. */
export function deviceIndexOf(id: string): number | null {
  const match = /^d(\d{2,3})$/.exec(id)
  if (match === null) return null
  const index = Number(match[1]) - 1
  return index >= 0 && index < MAX_DEVICES ? index : null
}

/**
 * Options every engine of the fleet shares, the aggregates included. Retention covers what the
 * chart shows, on the devices too: a device that was offline longer still has every cell the
 * dashboard would show.
 */
export function fleetEngineOptions(settings: FleetSettings, now: () => number): EngineOptions<FleetAggregates> {
  return {
    aggregates: fleetAggregates,
    windows: windowSpecOf(settings),
    watermark: boundedOutOfOrderness(settings.outOfOrdernessMs),
    allowedLateness: settings.allowedLatenessMs,
    retention: CHART_WINDOWS * settings.windowMs,
    now,
  }
}

/**
 * Options of the engine the dashboard reads. It owns no source: everything it shows is lattice
 * state merged from the devices' documents, which its links (`DashboardLinks`) bind to it
 * read-only. Silent devices stop holding its watermark back after the idle timeout.
 *
 * @example
 * const dashboard = createEngine(dashboardEngineOptions(DEFAULT_SETTINGS, Date.now))
 */
export function dashboardEngineOptions(settings: FleetSettings, now: () => number): EngineOptions<FleetAggregates> {
  return {
    ...fleetEngineOptions(settings, now),
    idleTimeout: settings.idleTimeoutMs,
    limits: { maxLateEvents: 500 },
  }
}

/** URL parameter and accepted range of each field a `?device=` tab takes from its URL. */
const QUERY_FIELDS = {
  windowMs: ['window', 100, 600_000],
  allowedLatenessMs: ['lateness', 0, 3_600_000],
  outOfOrdernessMs: ['ooo', 0, 600_000],
  deviceCount: ['devices', 1, MAX_DEVICES],
} as const

/**
 * Settings as URL parameters, for a `?device=` tab opened from the dashboard.
 *
 * @example
 * settingsQuery(DEFAULT_SETTINGS) // 'window=2000&lateness=10000&ooo=1000&devices=12'
 */
export function settingsQuery(settings: FleetSettings): string {
  const params = new URLSearchParams()
  for (const [field, [name]] of Object.entries(QUERY_FIELDS)) params.set(name, String(settings[field as keyof typeof QUERY_FIELDS]))
  return params.toString()
}

/**
 * Settings read back from URL parameters; missing or unreadable ones keep their defaults.
 *
 * @example
 * settingsFromQuery(new URLSearchParams('devices=48&window=5000')).deviceCount // 48
 */
export function settingsFromQuery(params: URLSearchParams): FleetSettings {
  const settings: Record<string, number> = { ...DEFAULT_SETTINGS }
  for (const [field, [name, min, max]] of Object.entries(QUERY_FIELDS)) {
    const value = Number(params.get(name) ?? Number.NaN)
    if (Number.isInteger(value) && value >= min && value <= max) settings[field] = value
  }
  return settings as unknown as FleetSettings
}

/**
 * Settings another page posted: every field a finite number in range, or null.
 *
 * @example
 * parseSettings({ ...DEFAULT_SETTINGS, windowMs: 0 }) // null
 */
export function parseSettings(value: unknown): FleetSettings | null {
  if (typeof value !== 'object' || value === null) return null
  const v = value as Record<string, unknown>
  const ok = (field: string, min: number, max: number): boolean => {
    const n = v[field]
    return typeof n === 'number' && Number.isInteger(n) && n >= min && n <= max
  }
  for (const [field, [, min, max]] of Object.entries(QUERY_FIELDS)) if (!ok(field, min, max)) return null
  if (!ok('idleTimeoutMs', 0, 3_600_000) || !ok('seed', 0, 2 ** 32)) return null
  return {
    deviceCount: v.deviceCount as number,
    windowMs: v.windowMs as number,
    allowedLatenessMs: v.allowedLatenessMs as number,
    outOfOrdernessMs: v.outOfOrdernessMs as number,
    idleTimeoutMs: v.idleTimeoutMs as number,
    seed: v.seed as number,
  }
}
