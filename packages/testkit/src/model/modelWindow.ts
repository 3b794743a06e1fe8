/**
 * The reference model's window record, and where windows lie: a fixed window's bounds come
 * from its spec, a session's from the events it admitted.
 */
import type { Basis, StreamEvent, WindowResult, WindowSpec } from '@tidemark/engine'

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
