/**
 * The reference model's window record, and where windows lie: a fixed window's bounds come
 * from its spec, a session's from the events it admitted.
 */
import type { AggregateDefinitions, Basis, PaneInfo, ResultStatus, StreamEvent, WindowResult, WindowSpec } from '@tidemark/engine'
import { modelAggregates } from './modelAggregates.ts'

/** An event a window admitted. */
export interface ModelEvent {
  readonly ts: number
  readonly value: number
  /** The event itself, for the aggregates' inputs. */
  readonly event: StreamEvent
}

/** One window of the model, recomputed from its events whenever it shows a pane. */
export interface ModelWindow {
  readonly spec: WindowSpec
  readonly key: string
  /** Start and end of a tumbling, sliding or cumulating window; sessions derive theirs from their events. */
  readonly fixedStart: number
  readonly fixedEnd: number
  readonly events: ModelEvent[]
  fired: boolean
  final: boolean
  /** -1 until the window emits a fired result. */
  revision: number
  /** Basis with which this window fired (through the frontier, or at birth past it). */
  firedBasis: Basis
  /** The end `firedBasis` speaks for. */
  basisEnd: number
  /** What the window showed last (its last pane, or that pane made final); null before its first. */
  shown: WindowResult | null
  /** The whole window as of its last pane (what discarding panes add up to). */
  shownWhole: { count: number; sum: number; min: number; max: number } | null
  panes: number
  onTimePanes: number
  /** Changed since its last pane. */
  dirty: boolean
  /** When its processing-time trigger fires (NaN: none armed), and the order it was armed in. */
  timerAt: number
  timerSeq: number
  /** Discarding: the events since its last pane, and whether its next pane carries the whole window. */
  pending: ModelEvent[]
  whole: boolean
}

/** The window's start. */
export function startOf(w: ModelWindow): number {
  if (w.spec.kind !== 'session') return w.fixedStart
  return Math.min(...w.events.map((e) => e.ts))
}

/** The window's end. */
export function endOf(w: ModelWindow): number {
  if (w.spec.kind !== 'session') return w.fixedEnd
  return Math.max(...w.events.map((e) => e.ts)) + w.spec.gap
}

/** Every tumbling, sliding or cumulating window holding `ts`, as [start, end). */
export function fixedWindows(spec: WindowSpec, ts: number): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = []
  if (spec.kind === 'session') return out
  if (spec.kind === 'cumulating') {
    const period = Math.floor(ts / spec.size) * spec.size
    for (let end = period + spec.step; end <= period + spec.size; end += spec.step) if (end > ts) out.push({ start: period, end })
    return out
  }
  const slide = spec.kind === 'sliding' ? spec.slide : spec.size
  const last = Math.floor(ts / slide) * slide
  for (let start = last - spec.size + slide; start <= last; start += slide) out.push({ start, end: start + spec.size })
  return out
}

/**
 * A window with no events yet. `bornFired` is set for a window that gets its first event past
 * the firing frontier: the basis the frontiers before the batch had for `end`, and that end.
 *
 * @example
 * const w = newModelWindow(tumbling(1_000), 'temp', 0, 1_000, null)
 * w.fired // false; w.revision // -1
 */
export function newModelWindow(
  spec: WindowSpec,
  key: string,
  fixedStart: number,
  fixedEnd: number,
  bornFired: { readonly basis: Basis; readonly end: number } | null,
): ModelWindow {
  return {
    spec,
    key,
    fixedStart,
    fixedEnd,
    events: [],
    fired: bornFired !== null,
    final: false,
    revision: -1,
    firedBasis: bornFired?.basis ?? 'unknown',
    basisEnd: bornFired?.end ?? Number.NEGATIVE_INFINITY,
    shown: null,
    shownWhole: null,
    panes: 0,
    onTimePanes: 0,
    dirty: false,
    timerAt: Number.NaN,
    timerSeq: 0,
    pending: [],
    whole: false,
  }
}

/**
 * A merged session carries on from the earliest session it absorbed: its basis, its panes and
 * its trigger, and what it showed unless its start `moved`.
 *
 * @example
 * carryOn(merged, earliest, false)
 * merged.panes === earliest.panes // true
 */
export function carryOn(merged: ModelWindow, earliest: ModelWindow, moved: boolean): void {
  merged.firedBasis = earliest.firedBasis
  merged.basisEnd = earliest.basisEnd
  merged.shown = moved ? null : earliest.shown
  merged.shownWhole = moved ? null : earliest.shownWhole
  merged.panes = earliest.panes
  merged.onTimePanes = earliest.onTimePanes
  merged.dirty = earliest.dirty
  // A session the merge fires (it took in a fired one) drops the timer its early trigger armed.
  merged.timerAt = merged.fired === earliest.fired ? earliest.timerAt : Number.NaN
  merged.timerSeq = earliest.timerSeq
}

/**
 * Count, sum, min and max of `events`' values; null for none.
 *
 * @example
 * totalsOf(w.events) // { count: 2, sum: 7, min: 3, max: 4 }
 */
export function totalsOf(events: readonly ModelEvent[]): { count: number; sum: number; min: number; max: number } | null {
  if (events.length === 0) return null
  const values = events.map((e) => e.value)
  return { count: values.length, sum: values.reduce((a, b) => a + b, 0), min: Math.min(...values), max: Math.max(...values) }
}

/**
 * The result a pane of `w` shows: `part` (the whole window, or a discarding pane's events)
 * folded, with its status and pane.
 *
 * @example
 * const pane = { timing: 'on_time', index: 0, onTimeIndex: 0 } as const
 * paneResult(w, w.events, { status: 'on_time', revision: 0, final: false, basis: 'proven', pane }, undefined).count
 */
export function paneResult(
  w: ModelWindow,
  part: readonly ModelEvent[],
  pane: { readonly status: ResultStatus; readonly revision: number; readonly final: boolean; readonly basis: Basis; readonly pane: PaneInfo },
  aggregates: AggregateDefinitions | undefined,
): WindowResult {
  const { count, sum, min, max } = totalsOf(part) ?? { count: 0, sum: 0, min: 0, max: 0 }
  const result: WindowResult = { window: w.spec.id, key: w.key, start: startOf(w), end: endOf(w), count, sum, min, max, mean: count === 0 ? 0 : sum / count, ...pane }
  if (aggregates === undefined) return result
  return { ...result, aggregates: modelAggregates(aggregates, part.map((e) => e.event)) } as WindowResult
}
