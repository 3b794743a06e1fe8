/**
 * The rules floor over shared slices: the rules floor (rulesLoop.ts: validation, future skew,
 * dedup, per-source clocks, watermark, lateness, late list, per-upload emission) for one sliding
 * spec, with each event folded into one slice of its key (`slide` long) instead of into every
 * window holding it. At the end of an upload, the windows its events changed are computed from
 * their slices in one sweep per run of consecutive windows (running count and sum, monotonic
 * queues for min and max: a few operations per window, whatever `size / slide` is), then emitted
 * as the rules floor emits them.
 *
 * One replica needs no per-source cells, and no partial slice parts either: the watermark stands
 * still within an upload and a window leaves at the end of the upload that takes it past its
 * lateness, so every live window holding a slice admits every event the slice takes. It is the
 * yardstick for sliding-1h-1m: its share of the sliced plain-loop floor is the most any
 * implementation of the engine's rules reaches there in the same run.
 */
import type { StreamEvent } from '@tidemark/engine'
import type { Contender, Outcome, RunContext } from '../harness/contender.ts'
import type { FixedWindow } from './fixedWindows.ts'
import { type Emission, EmissionSink, emitChange, rulesOutcome, type RulesLoopOptions, settleWindow, type Window } from './rulesLoop.ts'
import { UploadRules } from './uploadRules.ts'
import { PROCESSING_START } from './tidemark.ts'

interface Slice {
  count: number
  sum: number
  min: number
  max: number
  /** The upload that last wrote it. */
  changedIn: number
}

/** One key's slices and windows, both by ordinal (window `o` starts at `slide × o` and holds slices `o … o + perWindow − 1`). */
interface Series {
  readonly key: string
  readonly slices: Map<number, Slice>
  readonly windows: Map<number, Window>
  /** Ordinals of the slices the current upload wrote (each once). */
  readonly touched: number[]
  /** The upload that last wrote a slice of the key. */
  changedIn: number
}

export interface SlicedRulesLoopOptions extends Omit<RulesLoopOptions, 'windows'> {
  readonly window: FixedWindow
}

export function slicedRulesLoopContender(
  batches: readonly (readonly StreamEvent[])[],
  options: SlicedRulesLoopOptions,
  clock: (batch: number) => number = () => 0,
): Contender {
  return {
    name: 'rules-loop',
    label: "rules floor over slices: one hand-written loop keeping the engine's rules, one slice update per event, the changed windows swept from their slices once per upload",
    run: (context) => slicedRulesLoop(batches, options, clock, context),
  }
}

function slicedRulesLoop(
  batches: readonly (readonly StreamEvent[])[],
  options: SlicedRulesLoopOptions,
  clock: (batch: number) => number,
  { probe, record }: RunContext,
): Outcome {
  const { window: spec, allowedLateness } = options
  const { slide, size } = spec
  const perWindow = size / slide
  const rules = new UploadRules(options)
  const sink = new EmissionSink(record)
  const byKey = new Map<string, Series>()
  const changed: Series[] = []
  const sweep = new WindowSweep(perWindow)
  let liveWindows = 0
  for (let b = 0; b < batches.length; b++) {
    const batch = batches[b] as readonly StreamEvent[]
    rules.begin(PROCESSING_START + clock(b))
    const watermark = rules.watermark
    // The first window (by ordinal) whose end plus lateness is past the watermark: it and later ones admit.
    const admitFrom = Math.floor((watermark - allowedLateness - size) / slide) + 1
    for (let i = 0; i < batch.length; i++) {
      const event = batch[i] as StreamEvent
      if (!rules.admit(event, i)) continue
      const { ts, value } = event
      const s = Math.floor(ts / slide)
      if (s < admitFrom) {
        rules.refuse(event)
        continue
      }
      rules.accepted++
      const key = event.key ?? ''
      let series = byKey.get(key)
      if (series === undefined) {
        series = { key, slices: new Map(), windows: new Map(), touched: [], changedIn: -1 }
        byKey.set(key, series)
      }
      let slice = series.slices.get(s)
      if (slice === undefined) {
        slice = { count: 0, sum: 0, min: value, max: value, changedIn: -1 }
        series.slices.set(s, slice)
      }
      if (series.changedIn !== b) {
        series.changedIn = b
        series.touched.length = 0
        changed.push(series)
      }
      if (slice.changedIn !== b) {
        slice.changedIn = b
        series.touched.push(s)
      }
      slice.count++
      slice.sum += value
      if (value < slice.min) slice.min = value
      if (value > slice.max) slice.max = value
    }
    // The upload's changes: every admitting window holding a written slice, a provisional result
    // per unfired one, a correction per fired one.
    const out: Emission[] = []
    for (const series of changed) {
      const touched = series.touched.sort((x, y) => x - y)
      let t = 0
      while (t < touched.length) {
        // A run of windows: those holding touched slices that lie less than a window apart.
        const first = Math.max((touched[t] as number) - perWindow + 1, admitFrom)
        let last = touched[t] as number
        while (t + 1 < touched.length && (touched[t + 1] as number) - perWindow + 1 <= last + 1) last = touched[++t] as number
        t++
        sweep.load(series.slices, first, last)
        for (let o = first; o <= last; o++) {
          let w = series.windows.get(o)
          if (w === undefined) {
            const start = o * slide
            const end = start + size
            w = { ordinal: o, start, end, count: 0, sum: 0, min: 0, max: 0, fired: end <= watermark, revision: 0, changedIn: b, last: null }
            series.windows.set(o, w)
            liveWindows++
          }
          sweep.next(w)
          emitChange(w, spec.id, series.key, sink, out)
        }
      }
    }
    changed.length = 0
    if (rules.end()) {
      const next = rules.watermark
      for (const series of byKey.values()) {
        for (const w of series.windows.values()) {
          if (settleWindow(w, next, allowedLateness, spec.id, series.key, sink, out)) {
            // Window `o` is the last that holds slice `o`: both leave.
            series.windows.delete(w.ordinal)
            series.slices.delete(w.ordinal)
            liveWindows--
          }
        }
      }
    }
    probe.tick()
  }
  return rulesOutcome(rules, sink, liveWindows, byKey)
}

/**
 * Windows `first … last` of one key computed from their slices in one pass: count and sum kept
 * running (a slice enters, one leaves), min and max from monotonic queues of slice positions.
 */
class WindowSweep {
  readonly #perWindow: number
  #count = new Float64Array(0)
  #sum = new Float64Array(0)
  #min = new Float64Array(0)
  #max = new Float64Array(0)
  #minQueue = new Int32Array(0)
  #maxQueue = new Int32Array(0)
  #minHead = 0
  #minTail = 0
  #maxHead = 0
  #maxTail = 0
  /** Position (into the loaded slices) of the next window's first slice. */
  #at = 0
  #runCount = 0
  #runSum = 0

  constructor(perWindow: number) {
    this.#perWindow = perWindow
  }

  /** Loads the slices of windows `first … last` (ordinals `first … last + perWindow − 1`; missing ones empty) and takes in the first window's. */
  load(slices: Map<number, Slice>, first: number, last: number): void {
    const n = last - first + this.#perWindow
    if (this.#count.length < n) {
      this.#count = new Float64Array(2 * n)
      this.#sum = new Float64Array(2 * n)
      this.#min = new Float64Array(2 * n)
      this.#max = new Float64Array(2 * n)
      this.#minQueue = new Int32Array(2 * n)
      this.#maxQueue = new Int32Array(2 * n)
    }
    for (let j = 0; j < n; j++) {
      const slice = slices.get(first + j)
      this.#count[j] = slice === undefined ? 0 : slice.count
      this.#sum[j] = slice === undefined ? 0 : slice.sum
      this.#min[j] = slice === undefined ? Number.POSITIVE_INFINITY : slice.min
      this.#max[j] = slice === undefined ? Number.NEGATIVE_INFINITY : slice.max
    }
    this.#minHead = this.#minTail = this.#maxHead = this.#maxTail = 0
    this.#runCount = 0
    this.#runSum = 0
    this.#at = 0
    for (let j = 0; j < this.#perWindow - 1; j++) this.#enter(j)
  }

  /** Writes the next window's count, sum, min and max into `w`. */
  next(w: Window): void {
    const first = this.#at
    this.#enter(first + this.#perWindow - 1)
    while ((this.#minQueue[this.#minHead] as number) < first) this.#minHead++
    while ((this.#maxQueue[this.#maxHead] as number) < first) this.#maxHead++
    w.count = this.#runCount
    w.sum = this.#runSum
    w.min = this.#min[this.#minQueue[this.#minHead] as number] as number
    w.max = this.#max[this.#maxQueue[this.#maxHead] as number] as number
    this.#runCount -= this.#count[first] as number
    this.#runSum -= this.#sum[first] as number
    this.#at = first + 1
  }

  #enter(j: number): void {
    this.#runCount += this.#count[j] as number
    this.#runSum += this.#sum[j] as number
    const min = this.#min[j] as number
    while (this.#minTail > this.#minHead && (this.#min[this.#minQueue[this.#minTail - 1] as number] as number) >= min) this.#minTail--
    this.#minQueue[this.#minTail++] = j
    const max = this.#max[j] as number
    while (this.#maxTail > this.#maxHead && (this.#max[this.#maxQueue[this.#maxTail - 1] as number] as number) <= max) this.#maxTail--
    this.#maxQueue[this.#maxTail++] = j
  }
}
