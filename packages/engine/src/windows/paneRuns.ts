import type { SourceClock } from '../time/sourceClock.ts'
import type { PlacementSource } from './windowIndex.ts'
import { alignedStart } from './windowSpec.ts'

/**
 * One run of a batch: consecutive events of one source (in batch order, among that source's
 * events) with one key, all in one pane. Every event of a run falls in the same windows of
 * every fixed spec, so the run is placed once per window instead of once per event.
 */
export class PaneRun {
  source: PlacementSource
  key = ''
  /** Start of the pane (an aligned multiple of the pane size). */
  pane = 0
  count = 0
  min = Number.POSITIVE_INFINITY
  max = Number.NEGATIVE_INFINITY
  maxTs = Number.NEGATIVE_INFINITY
  /** Clock version of the run's last event: what a cell it reaches ends up with. */
  version = 0
  /** First and last event of the run, as positions in the batch's `values` / `next`. */
  head = -1
  tail = -1
  /** Bit `s` set: spec `s` refused the run's events (beyond lateness). */
  refused = 0
  /** Batch in which this run was last started (per-source lookup ignores older ones). */
  batch = 0
  /** Position in `PaneRuns.runs` (fixed: the pool never reorders). */
  readonly at: number

  constructor(source: PlacementSource, at: number) {
    this.source = source
    this.at = at
  }
}

/** Events per batch above which the per-event buffers are released after the batch. */
export const LARGE_BATCH = 1 << 16
/** Runs kept in the pool across batches. */
const KEPT_RUNS = 4096

/**
 * The runs of the batch being placed, collected in order of their first event.
 *
 * A pane is the gcd of the fixed specs' slides: every window start and end is a multiple of it,
 * so two times in one pane fall in exactly the same windows. Only consecutive events of a source
 * join a run, so folding a run into a cell adds the same values in the same order, and leaves the
 * same version, as adding its events one by one would: cells stay bit-identical (float sums
 * included). Windows are reached in order of the runs' first events, which is the order events
 * would first reach them: creation, touch and write order (hence emission order) are unchanged.
 */
export class PaneRuns {
  readonly paneSize: number
  /** Runs in use are `runs[0 .. count)`; the pool keeps the objects across batches. */
  readonly runs: PaneRun[] = []
  count = 0
  /** Per placed event (by position `m` in placement order): its value, the next event of its run (-1 at the end), its run, its index in the batch. */
  values = new Float64Array(128)
  next = new Int32Array(128)
  runOf = new Int32Array(128)
  eventAt = new Int32Array(128)
  placed = 0
  /** By source slot: the source's latest run. */
  readonly #latest: (PaneRun | undefined)[] = []
  #batch = 0

  constructor(paneSize: number) {
    this.paneSize = paneSize
  }

  /** Starts collecting a batch of at most `n` events. */
  begin(n: number): void {
    if (this.values.length < n) {
      const size = Math.max(n, this.values.length * 2)
      this.values = new Float64Array(size)
      this.next = new Int32Array(size)
      this.runOf = new Int32Array(size)
      this.eventAt = new Int32Array(size)
    }
    this.count = 0
    this.placed = 0
    this.#batch++
  }

  /**
   * After a batch: buffers a batch far beyond the usual size grew are released, so one large
   * backlog does not stay allocated for the engine's lifetime.
   */
  release(): void {
    if (this.values.length > LARGE_BATCH) {
      this.values = new Float64Array(128)
      this.next = new Int32Array(128)
      this.runOf = new Int32Array(128)
      this.eventAt = new Int32Array(128)
    }
    if (this.runs.length > KEPT_RUNS) this.runs.length = KEPT_RUNS
  }

  /** Adds event `index` of the batch, of `source` at clock `version`, to its source's run or a new one. */
  add(source: SourceClock, key: string, ts: number, value: number, version: number, index: number): void {
    let run = this.#latest[source.slot]
    // In the pane of the source's latest run: two comparisons instead of aligning `ts`.
    if (run === undefined || run.batch !== this.#batch || !(ts >= run.pane && ts < run.pane + this.paneSize) || run.key !== key || run.source !== source) {
      const pane = alignedStart(ts, this.paneSize)
      const at = this.count++
      run = this.runs[at]
      if (run === undefined) {
        run = new PaneRun(source, at)
        this.runs.push(run)
      }
      run.source = source
      run.key = key
      run.pane = pane
      run.count = 0
      run.min = Number.POSITIVE_INFINITY
      run.max = Number.NEGATIVE_INFINITY
      run.maxTs = Number.NEGATIVE_INFINITY
      run.head = -1
      run.tail = -1
      run.refused = 0
      run.batch = this.#batch
      this.#latest[source.slot] = run
    }
    const m = this.placed++
    this.values[m] = value
    this.next[m] = -1
    this.eventAt[m] = index
    this.runOf[m] = run.at
    if (run.tail < 0) run.head = m
    else this.next[run.tail] = m
    run.tail = m
    run.count++
    if (value < run.min) run.min = value
    if (value > run.max) run.max = value
    if (ts > run.maxTs) run.maxTs = ts
    run.version = version
  }
}
