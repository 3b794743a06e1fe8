/** What the page leaves on `window.__result` when the run ends. */
export interface PageResult {
  readonly components: number
  readonly events: number
  readonly ingestMs: number
  /** Events per second actually ingested. */
  readonly eventsPerSecond: number
  /** rAF frames counted during the ingest window. */
  readonly frames: number
  /** Intervals between consecutive rAF timestamps, ms (includes vsync waits and dropped frames). */
  readonly frameIntervalMs: Percentiles
  /** Main-thread time of each frame: rAF timestamp to the first task after the frame's rendering step, ms. */
  readonly frameWorkMs: Percentiles
  /** Intervals longer than 1.5 × the median interval (dropped frames). */
  readonly droppedFrames: number
  /** Time of each `engine.ingest` call, ms. */
  readonly ingestCallMs: Percentiles
  readonly ingestCalls: number
  /** Most renders of one component within one frame. */
  readonly maxRendersPerComponentPerFrame: number
  /** Renders / (component, frame) pairs in which the component rendered at all. */
  readonly meanRendersPerRenderingFrame: number
  /** Renders / (components × frames): how often a component shows a new value. */
  readonly meanRendersPerComponentPerFrame: number
  readonly totalRenders: number
  readonly longTasks: number
  readonly longTaskTotalMs: number
  readonly longTaskMaxMs: number
  /** False when the browser does not report 'longtask' entries (then the two counts above mean nothing). */
  readonly longTaskSupported: boolean
  readonly windowsWithValue: number
}

export interface Percentiles {
  readonly p50: number
  readonly p95: number
  readonly max: number
  readonly mean: number
}

export function percentiles(values: readonly number[]): Percentiles {
  if (values.length === 0) return { p50: Number.NaN, p95: Number.NaN, max: Number.NaN, mean: Number.NaN }
  const sorted = [...values].sort((a, b) => a - b)
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number
  const mean = sorted.reduce((s, v) => s + v, 0) / sorted.length
  return { p50: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1] as number, mean }
}
