import { boundedOutOfOrderness, createEngine, type Engine, tumbling } from '@tidemark/engine'

/** What the control bar can change. Changing any of them recreates every engine. */
export interface FleetSettings {
  readonly deviceCount: number
  readonly windowMs: number
  readonly allowedLatenessMs: number
  /** Bounded out-of-orderness of the watermark. */
  readonly outOfOrdernessMs: number
  /** Processing time after which a silent device stops holding the watermark back. */
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

/** The id the engine gives the dashboard's window spec, e.g. `tumbling:2000`. */
export function windowIdOf(settings: FleetSettings): string {
  return tumbling(settings.windowMs).id
}

/**
 * The engine the dashboard reads. Final windows stay in `results()` for as
 * long as the chart shows them; the late lane is kept short because the UI
 * re-reads it every frame.
 */
export function createDashboardEngine(settings: FleetSettings, now: () => number): Engine {
  return createEngine({
    windows: tumbling(settings.windowMs),
    watermark: boundedOutOfOrderness(settings.outOfOrdernessMs),
    allowedLateness: settings.allowedLatenessMs,
    idleTimeout: settings.idleTimeoutMs,
    retention: CHART_WINDOWS * settings.windowMs,
    now,
    limits: { maxLateEvents: 500 },
  })
}

/** A device's own engine: the same windows over its own readings only. */
export function createDeviceEngine(settings: FleetSettings, now: () => number): Engine {
  return createEngine({
    windows: tumbling(settings.windowMs),
    watermark: boundedOutOfOrderness(settings.outOfOrdernessMs),
    allowedLateness: settings.allowedLatenessMs,
    retention: settings.windowMs * 5,
    now,
    limits: { maxLateEvents: 100 },
  })
}
