/**
 * What a profile compares: contenders that process the same prepared events, each reporting
 * its end-of-run gauges so one can tell which keeps pending state small.
 */
import type { HeapProbe } from './memory.ts'

/** Final `(count, sum)` of every fired window, by window id, to check that implementations agree. */
export interface WindowTotal {
  readonly end: number
  readonly count: number
  readonly sum: number
}
export type WindowTotals = Map<string, WindowTotal>

export function windowTotalId(window: string, key: string, start: number): string {
  return `${window}\u0000${key}\u0000${start}`
}

export interface RunContext {
  readonly probe: HeapProbe
  /** Record what is needed to verify the run (window totals, emission checksums); off in timed runs. */
  readonly record: boolean
}

export interface Outcome {
  /** Gauges at the end of the run: pending events, live windows, dedup entries, late list. */
  readonly end: Readonly<Record<string, number>>
  /** Counters over the run: accepted, late, duplicates, emitted changes. */
  readonly counts: Readonly<Record<string, number>>
  /** Recorded runs of window contenders: the last fired value of every window. */
  readonly totals?: WindowTotals
  /** Event-time watermark at the end (window totals are compared up to it). */
  readonly watermark?: number
  /** Recorded runs of ordered contenders: an order-sensitive hash of everything emitted. */
  readonly checksum?: number
  /** Builds a compact model of the live window state; its heap size is set beside the retained heap. */
  readonly liveModel?: () => unknown
  /** What the run holds at its end; kept alive until its retained heap has been read. */
  readonly state?: unknown
  /** Ends the run's streams; called after its memory has been read. */
  readonly close?: () => void
}

export interface Contender {
  /** Short stable name used in results: `tidemark`, `plain-loop`, `rxjs`, `ordered-stream`, `naive-sort`. */
  readonly name: string
  /** One line saying what it is, for the Markdown report. */
  readonly label: string
  /** Timed rounds for this contender when it must differ from the profile's (slow baselines run once). */
  readonly rounds?: number
  readonly warmup?: number
  run(context: RunContext): Outcome
}
