/**
 * The RxJS 7 peer of the ordered stream, as an RxJS user would write "release events in order
 * once the watermark passes them": the shared clock (rxjsClock.ts), then one `scan` that appends
 * on-time events to a pending array and, at each upload's end, sorts it and splits off the ready
 * prefix; late events within `allowedLateness` come out as a sorted correction batch, older ones
 * go to the late list. Same total order as Tidemark: (ts, source, seq, id).
 */
import type { StreamEvent } from '@tidemark/engine'
import { mergeMap, type Observable, scan, Subject } from 'rxjs'
import type { Contender, Outcome, RunContext } from '../harness/contender.ts'
import { CHECKSUM_SEED, hashId } from './emissionChecksum.ts'
import { type ClockGauges, type ClockOptions, clockSignals, type Signal, type Upload } from './rxjsClock.ts'

export interface RxOrderedOptions extends ClockOptions {
  readonly allowedLateness: number
}

export interface RxOrderedBatch {
  readonly kind: 'ready' | 'correction'
  readonly events: readonly StreamEvent[]
}

interface ReorderState {
  pending: StreamEvent[]
  corrections: StreamEvent[]
  readonly late: StreamEvent[]
  out: RxOrderedBatch[]
}

const NONE: RxOrderedBatch[] = []

/** Instrumentation read at the end of a run. */
export interface RxOrderedGauges extends ClockGauges {
  pending: number
}

export function rxjsOrderedStream(
  uploads$: Observable<Upload>,
  options: RxOrderedOptions,
  gauges: RxOrderedGauges,
  late: StreamEvent[],
): Observable<RxOrderedBatch> {
  return clockSignals(uploads$, options, gauges).pipe(
    scan((state: ReorderState, signal: Signal) => reorder(state, signal, options.allowedLateness, gauges), {
      pending: [],
      corrections: [],
      late,
      out: NONE,
    }),
    mergeMap((state) => state.out),
  )
}

function reorder(state: ReorderState, signal: Signal, allowedLateness: number, gauges: RxOrderedGauges): ReorderState {
  state.out = NONE
  if (signal.kind === 'event') {
    const { event, watermark } = signal
    if (event.ts >= watermark) state.pending.push(event)
    else if (event.ts >= watermark - allowedLateness) state.corrections.push(event)
    else state.late.push(event)
    return state
  }
  const out: RxOrderedBatch[] = []
  state.pending.sort(byEventOrder)
  let ready = 0
  while (ready < state.pending.length && (state.pending[ready] as StreamEvent).ts < signal.watermark) ready++
  if (ready > 0) {
    out.push({ kind: 'ready', events: state.pending.slice(0, ready) })
    state.pending = state.pending.slice(ready)
  }
  if (state.corrections.length > 0) {
    out.push({ kind: 'correction', events: state.corrections.sort(byEventOrder) })
    state.corrections = []
  }
  state.out = out
  gauges.pending = state.pending.length
  return state
}

function byEventOrder(a: StreamEvent, b: StreamEvent): number {
  if (a.ts !== b.ts) return a.ts < b.ts ? -1 : 1
  if (a.source !== b.source) return a.source < b.source ? -1 : 1
  const sa = a.seq ?? 0
  const sb = b.seq ?? 0
  if (sa !== sb) return sa - sb
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
}

export function rxjsOrderedContender(pushes: readonly (readonly StreamEvent[])[], options: RxOrderedOptions): Contender {
  return {
    name: 'rxjs',
    label: 'RxJS 7: distinct, scan (watermark), scan (pending array sorted per upload, ready prefix split off)',
    run: (context) => runRxOrdered(pushes, options, context),
  }
}

function runRxOrdered(pushes: readonly (readonly StreamEvent[])[], options: RxOrderedOptions, { probe, record }: RunContext): Outcome {
  const gauges: RxOrderedGauges = { rejected: 0, watermark: Number.NEGATIVE_INFINITY, pending: 0 }
  const input = new Subject<Upload>()
  const late: StreamEvent[] = []
  let emittedReady = 0
  let emittedCorrections = 0
  let checksum = CHECKSUM_SEED
  const subscription = rxjsOrderedStream(input, options, gauges, late).subscribe((batch) => {
    if (record) for (const e of batch.events) checksum = hashId(checksum, e.id)
    if (batch.kind === 'ready') emittedReady += batch.events.length
    else emittedCorrections += batch.events.length
  })
  for (let i = 0; i < pushes.length; i++) {
    input.next({ events: pushes[i] as readonly StreamEvent[], now: 0 })
    probe.tick()
  }
  const outcome: Outcome = {
    end: { pending: gauges.pending, lateList: late.length },
    counts: { emittedReady, emittedCorrections, rejected: gauges.rejected },
    watermark: gauges.watermark,
    state: { input, subscription, late },
    close: () => {
      input.complete()
      subscription.unsubscribe()
    },
  }
  return record ? { ...outcome, checksum } : outcome
}
