/** What the page leaves on `window.__result` when the run ends. */
export interface PageResult {
  /**
   * How tiles show their value: text spans (`dom`) or cells of one canvas
   * (`canvas`); `-floor`: the same without engine, bindings or React.
   */
  readonly view: 'dom' | 'canvas' | 'dom-floor' | 'canvas-floor'
  readonly components: number
  readonly events: number
  /** Events per second the run was asked for. */
  readonly targetRate: number
  /** From the first due event to the frame after the last ingest, ms. */
  readonly runMs: number
  /** Events per second actually ingested over `runMs`. */
  readonly eventsPerSecond: number
  /** rAF frames counted during the run. */
  readonly frames: number
  /** Intervals between consecutive rAF timestamps, ms (vsync waits and dropped frames included). */
  readonly frameIntervalMs: Percentiles
  /** The provider's feed handing one frame's changes to every observer (bindings), ms per frame it ran. */
  readonly fanOutMs: Percentiles
  /** React's render and commit after that fan-out (up to the DOM mutations; not style, layout, paint), ms. */
  readonly reactMs: Percentiles
  /** Frames in which the provider's feed ran. */
  readonly feedFrames: number
  /** Time of each `engine.ingest` call, ms (the engine, including its synchronous notification). */
  readonly ingestCallMs: Percentiles
  readonly ingestCalls: number
  readonly ingestTotalMs: number
  /** `performance.now()` start and end (flat pairs) of each ingest call, fan-out and React render + commit. */
  readonly spans: { readonly ingest: readonly number[]; readonly fanOut: readonly number[]; readonly react: readonly number[] }
  /** Most renders of one component within one frame. */
  readonly maxRendersPerComponentPerFrame: number
  /** Renders / (component, frame) pairs in which the component rendered at all. */
  readonly meanRendersPerRenderingFrame: number
  /** Renders / (components × frames): how often a component shows a new value. */
  readonly meanRendersPerComponentPerFrame: number
  readonly measuredRenders: number
  readonly longTasks: number
  readonly longTaskTotalMs: number
  readonly longTaskMaxMs: number
  /** False when the browser does not report 'longtask' entries (then the counts above mean nothing). */
  readonly longTaskSupported: boolean
  readonly windowsWithValue: number
}

export interface Percentiles {
  readonly count: number
  readonly p50: number
  readonly p95: number
  readonly p99: number
  readonly max: number
  readonly mean: number
}

/** Nearest-rank percentiles; NaN for no values. */
export function percentiles(values: readonly number[]): Percentiles {
  if (values.length === 0) {
    return { count: 0, p50: Number.NaN, p95: Number.NaN, p99: Number.NaN, max: Number.NaN, mean: Number.NaN }
  }
  const sorted = [...values].sort((a, b) => a - b)
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number
  const mean = sorted.reduce((s, v) => s + v, 0) / sorted.length
  return { count: sorted.length, p50: at(0.5), p95: at(0.95), p99: at(0.99), max: sorted[sorted.length - 1] as number, mean }
}
