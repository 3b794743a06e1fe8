/**
 * The RxJS 7 peer: the same event-time windows, watermark and lateness, written the way a
 * browser team would write them with RxJS: validate and `distinct` upstream, a `scan` that keeps
 * per-source clocks and derives the watermark (rxjsClock.ts), then `groupBy` key and, per key, a
 * `scan` over its events merged with the watermark ticks that opens, fires, corrects and drops
 * windows.
 *
 * Semantics kept equal to the engine so the totals can be checked window by window: a window
 * fires (on_time) when the watermark reaches its end; an event for a fired window within
 * `allowedLateness` re-emits it (correction); beyond, the event goes to the late list.
 *
 * Deliberate differences, each in RxJS's favour or neutral: no provisional results, no result
 * history, no bounds (the `distinct` set and the late list grow without limit), no proof
 * frontier. Corrections are emitted per late event (a `scan` emits per input) where the engine
 * coalesces them per batch. State is mutated inside `scan` rather than copied: the fast way a
 * performance-minded RxJS user would write it.
 */
import type { StreamEvent } from '@tidemark/engine'
import { filter, groupBy, merge, mergeMap, type Observable, scan, share, Subject } from 'rxjs'
import type { Contender, Outcome, RunContext, WindowTotals } from '../harness/contender.ts'
import { windowTotalId } from '../harness/contender.ts'
import { alignedStart, type FixedWindow } from './fixedWindows.ts'
import { type ClockGauges, clockSignals, type Signal, type Upload } from './rxjsClock.ts'

export interface RxWindowOptions {
  readonly windows: readonly FixedWindow[]
  readonly outOfOrderness: number
  readonly allowedLateness: number
  /** Processing-time ms; default Infinity. */
  readonly idleTimeout?: number
}

export interface RxWindowResult {
  readonly kind: 'on_time' | 'correction'
  readonly window: string
  readonly key: string
  readonly start: number
  readonly end: number
  readonly count: number
  readonly sum: number
  readonly min: number
  readonly max: number
  readonly revision: number
}

export interface RxLate {
  readonly kind: 'late'
  readonly event: StreamEvent
  readonly window: string
}

export type RxEmission = RxWindowResult | RxLate

/** Instrumentation read at the end of a run; not part of the pipeline's logic. */
export interface RxGauges extends ClockGauges {
  beyondLateness: number
  liveWindows: number
  /** Events held in windows that have not fired, counted once per window (as the engine's `pending`). */
  pending: number
}

interface Window {
  readonly start: number
  readonly end: number
  count: number
  sum: number
  min: number
  max: number
  fired: boolean
  revision: number
}

interface KeyState {
  readonly key: string
  /** Per window spec: open windows by start. */
  readonly windows: Map<number, Window>[]
  out: RxEmission[]
}

/** The event-time window pipeline over a stream of uploads. */
export function rxjsWindows(uploads$: Observable<Upload>, options: RxWindowOptions, gauges: RxGauges): Observable<RxEmission> {
  const signals$ = clockSignals(uploads$, options, gauges).pipe(share())
  const watermarks$ = signals$.pipe(filter((s) => s.kind === 'watermark' && s.moved))
  return signals$.pipe(
    filter((s) => s.kind === 'event'),
    groupBy((s) => (s.kind === 'event' ? (s.event.key ?? '') : '')),
    mergeMap((group$) =>
      merge(group$, watermarks$).pipe(
        scan((state: KeyState, signal: Signal) => stepKey(state, signal, options, gauges), {
          key: group$.key,
          windows: options.windows.map(() => new Map<number, Window>()),
          out: [],
        }),
        mergeMap((state) => state.out),
      ),
    ),
  )
}

function stepKey(state: KeyState, signal: Signal, options: RxWindowOptions, gauges: RxGauges): KeyState {
  state.out = []
  if (signal.kind === 'event') place(state, signal.event, signal.watermark, options, gauges)
  else fire(state, signal.watermark, options, gauges)
  return state
}

function place(state: KeyState, event: StreamEvent, watermark: number, options: RxWindowOptions, gauges: RxGauges): void {
  const { ts, value } = event
  let admitted = false
  for (let s = 0; s < options.windows.length; s++) {
    const spec = options.windows[s] as FixedWindow
    const windows = state.windows[s] as Map<number, Window>
    for (let start = alignedStart(ts, spec.slide); start > ts - spec.size; start -= spec.slide) {
      const end = start + spec.size
      let w = windows.get(start)
      if (w === undefined) {
        // Open windows are dropped once final, so a missing window past the lateness is final.
        if (end + options.allowedLateness <= watermark) {
          state.out.push({ kind: 'late', event, window: spec.id })
          continue
        }
        w = { start, end, count: 0, sum: 0, min: value, max: value, fired: end <= watermark, revision: 0 }
        windows.set(start, w)
        gauges.liveWindows++
      }
      admitted = true
      if (!w.fired) gauges.pending++
      w.count++
      w.sum += value
      if (value < w.min) w.min = value
      if (value > w.max) w.max = value
      if (w.fired) {
        w.revision++
        state.out.push(result('correction', spec.id, state.key, w))
      }
    }
  }
  if (!admitted) gauges.beyondLateness++
}

function fire(state: KeyState, watermark: number, options: RxWindowOptions, gauges: RxGauges): void {
  for (let s = 0; s < options.windows.length; s++) {
    const spec = options.windows[s] as FixedWindow
    const windows = state.windows[s] as Map<number, Window>
    for (const w of windows.values()) {
      if (!w.fired && w.end <= watermark) {
        w.fired = true
        gauges.pending -= w.count
        state.out.push(result('on_time', spec.id, state.key, w))
      }
      if (w.end + options.allowedLateness <= watermark) {
        windows.delete(w.start)
        gauges.liveWindows--
      }
    }
  }
}

function result(kind: RxWindowResult['kind'], window: string, key: string, w: Window): RxWindowResult {
  return { kind, window, key, start: w.start, end: w.end, count: w.count, sum: w.sum, min: w.min, max: w.max, revision: w.revision }
}

/** The RxJS pipeline as a contender: uploads pushed through a Subject, one subscriber keeping the late list. */
export function rxjsContender(
  batches: readonly (readonly StreamEvent[])[],
  options: RxWindowOptions,
  clock: (batch: number) => number = () => 0,
): Contender {
  return {
    name: 'rxjs',
    label: 'RxJS 7: distinct, scan (watermark), groupBy key, mergeMap(merge(group, watermarks) → scan)',
    run: (context) => runRx(batches, options, clock, context),
  }
}

function runRx(
  batches: readonly (readonly StreamEvent[])[],
  options: RxWindowOptions,
  clock: (batch: number) => number,
  { probe, record }: RunContext,
): Outcome {
  const gauges: RxGauges = { rejected: 0, beyondLateness: 0, liveWindows: 0, pending: 0, watermark: Number.NEGATIVE_INFINITY }
  const input = new Subject<Upload>()
  const late: RxLate[] = []
  const totals: WindowTotals | undefined = record ? new Map() : undefined
  let emitted = 0
  let corrections = 0
  // The stream stays open until the outcome is closed, so the retained heap includes the live pipeline.
  const subscription = rxjsWindows(input, options, gauges).subscribe((emission) => {
    if (emission.kind === 'late') {
      late.push(emission)
      return
    }
    emitted++
    if (emission.kind === 'correction') corrections++
    totals?.set(windowTotalId(emission.window, emission.key, emission.start), {
      end: emission.end,
      count: emission.count,
      sum: emission.sum,
    })
  })
  for (let i = 0; i < batches.length; i++) {
    input.next({ events: batches[i] as readonly StreamEvent[], now: clock(i) })
    probe.tick()
  }
  const outcome: Outcome = {
    end: { pending: gauges.pending, liveWindows: gauges.liveWindows, lateList: late.length },
    counts: { emitted, corrections, beyondLateness: gauges.beyondLateness, rejected: gauges.rejected },
    watermark: gauges.watermark,
    state: { input, subscription, late },
    close: () => {
      input.complete()
      subscription.unsubscribe()
    },
  }
  return totals === undefined ? outcome : { ...outcome, totals }
}
