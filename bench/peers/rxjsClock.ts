/**
 * The upstream half of both RxJS peers: flatten uploads into events, validate, `distinct`, and a
 * `scan` that keeps per-source clocks and derives the watermark the way the engine defines it
 * (docs/semantics.md, the watermark W): per source max ts − out-of-orderness, min over sources not idle, never backwards,
 * moved at the end of each upload, so every event of an upload is judged against the watermark
 * as it stood before it.
 */
import type { StreamEvent } from '@tidemark/engine'
import { concat, concatMap, distinct, filter, from, map, type Observable, of, scan } from 'rxjs'

/** One upload: its events and the processing time it arrived at. */
export interface Upload {
  readonly events: readonly StreamEvent[]
  readonly now: number
}

export type Signal =
  | { readonly kind: 'event'; readonly event: StreamEvent; readonly watermark: number }
  /** End of an upload; `moved` when the watermark advanced. */
  | { readonly kind: 'watermark'; readonly watermark: number; readonly moved: boolean }

export interface ClockOptions {
  readonly outOfOrderness: number
  /** Processing-time ms; default Infinity. */
  readonly idleTimeout?: number
}

/** Instrumentation read at the end of a run; not part of the pipelines' logic. */
export interface ClockGauges {
  rejected: number
  watermark: number
}

interface BatchEnd {
  readonly kind: 'batch_end'
  readonly now: number
}

interface SourceClock {
  maxTs: number
  lastSeen: number
  seenInBatch: boolean
}

interface ClockState {
  readonly sources: Map<string, SourceClock>
  watermark: number
  signal: Signal
}

export function clockSignals(uploads$: Observable<Upload>, options: ClockOptions, gauges: ClockGauges): Observable<Signal> {
  const idleTimeout = options.idleTimeout ?? Number.POSITIVE_INFINITY
  const initial: ClockState = {
    sources: new Map(),
    watermark: Number.NEGATIVE_INFINITY,
    signal: { kind: 'watermark', watermark: Number.NEGATIVE_INFINITY, moved: false },
  }
  return uploads$.pipe(
    concatMap(({ events, now }) => concat(from(events), of<BatchEnd>({ kind: 'batch_end', now }))),
    filter((item) => isBatchEnd(item) || isValid(item, gauges)),
    // Each batch end is a distinct object, so it passes; events dedup by (source, seq) or (source, id).
    distinct((item) => (isBatchEnd(item) ? item : dedupKey(item))),
    scan((clock: ClockState, item) => advance(clock, item, options.outOfOrderness, idleTimeout, gauges), initial),
    map((clock) => clock.signal),
  )
}

function isBatchEnd(item: StreamEvent | BatchEnd): item is BatchEnd {
  return (item as BatchEnd).kind === 'batch_end'
}

/** The RxJS user's own validation, equivalent to the engine's for the inputs the profiles send. */
function isValid(item: StreamEvent | BatchEnd, gauges: ClockGauges): boolean {
  const e = item as StreamEvent
  const ok =
    typeof e === 'object' &&
    e !== null &&
    typeof e.id === 'string' &&
    e.id !== '' &&
    typeof e.source === 'string' &&
    e.source !== '' &&
    Number.isFinite(e.ts) &&
    Number.isFinite(e.value) &&
    (e.seq === undefined || (Number.isSafeInteger(e.seq) && e.seq >= 1)) &&
    (e.key === undefined || typeof e.key === 'string')
  if (!ok) gauges.rejected++
  return ok
}

function dedupKey(e: StreamEvent): string {
  return e.seq === undefined ? `${e.source}\u0000id\u0000${e.id}` : `${e.source}\u0000${e.seq}`
}

function advance(clock: ClockState, item: StreamEvent | BatchEnd, outOfOrderness: number, idleTimeout: number, gauges: ClockGauges): ClockState {
  if (!isBatchEnd(item)) {
    let source = clock.sources.get(item.source)
    if (source === undefined) {
      source = { maxTs: item.ts, lastSeen: Number.NaN, seenInBatch: true }
      clock.sources.set(item.source, source)
    }
    if (item.ts > source.maxTs) source.maxTs = item.ts
    source.seenInBatch = true
    clock.signal = { kind: 'event', event: item, watermark: clock.watermark }
    return clock
  }
  let active = Number.POSITIVE_INFINITY
  for (const source of clock.sources.values()) {
    if (source.seenInBatch) {
      source.lastSeen = item.now
      source.seenInBatch = false
    }
    if (item.now - source.lastSeen <= idleTimeout && source.maxTs < active) active = source.maxTs
  }
  const watermark = active === Number.POSITIVE_INFINITY ? clock.watermark : Math.max(clock.watermark, active - outOfOrderness)
  clock.signal = { kind: 'watermark', watermark, moved: watermark > clock.watermark }
  clock.watermark = watermark
  gauges.watermark = watermark
  return clock
}
