/**
 * The rules floor: the least work that keeps the engine's rules for fixed windows, written as one
 * hand-tuned loop, no library around it. Where the plain-loop floor only folds events into
 * windows, this one also does what no implementation of the semantics can skip
 * (docs/semantics.md):
 *
 * - validates every input and records an anomaly with a reason for each one refused;
 * - refuses events stamped past `now + maxFutureSkew`;
 * - deduplicates per source (a seq prefix and the seqs seen ahead of it; ids without a seq);
 * - keeps per-source clocks and moves the watermark (max ts − out-of-orderness, min over sources
 *   not idle, never backwards) between uploads, judging every event of an upload against the
 *   watermark as it stood before it;
 * - admits late events within `allowedLateness` and keeps a copy of those beyond in a late list;
 * - emits, per upload, one result per window it changed (provisional before the window fired, a
 *   correction carrying the previous result after), an on-time result when the watermark passes
 *   a window's end, and drops a window once final.
 *
 * What it leaves out, each in its favour: per-source lattice cells (replication; the cells floor,
 * `cells: true`, keeps them and nothing more), the write-ahead
 * log's batch, bounds (sources, dedup entries, windows), conflicting-duplicate checks, proof and
 * completeness frontiers, result history, checkpoints, and the late lane's bound. It is the
 * yardstick for "how much of the engine's cost is its rules": its own share of the plain-loop
 * floor is the most any implementation of these rules can reach in the same run.
 *
 * The cells floor (`cells: true`, contender `cells-loop`) is the same loop keeping, in each
 * window, a lattice cell per source (count, sum, min, max, max ts and the source's version, the
 * state replication merges), the window's result folded from its cells when it emits. Its share
 * of the plain-loop floor is the most an implementation of the rules that replicates per source,
 * as Tidemark's contract does, can reach in the same run.
 */
import type { StreamEvent } from '@tidemark/engine'
import type { Contender, Outcome, RunContext, WindowTotals } from '../harness/contender.ts'
import { windowTotalId } from '../harness/contender.ts'
import type { FixedWindow } from './fixedWindows.ts'
import { PROCESSING_START } from './tidemark.ts'
import { type Source, type SourceCell, UploadRules, type UploadRulesOptions } from './uploadRules.ts'

export interface RulesLoopOptions extends UploadRulesOptions {
  readonly windows: readonly FixedWindow[]
  readonly allowedLateness: number
  /**
   * Keep a lattice cell per source and window, as replication needs (docs/replication.md: a
   * window's state is its sources' cells, each stamped with its source's version), and fold a
   * window's result from its cells when it emits: the cells floor. Default false.
   */
  readonly cells?: boolean
}

export interface Window {
  readonly ordinal: number
  readonly start: number
  readonly end: number
  count: number
  sum: number
  min: number
  max: number
  fired: boolean
  revision: number
  /** The upload that last changed it (emits once per upload). */
  changedIn: number
  /** What it last emitted (a correction carries it as `previous`). */
  last: Emission | null
  /** The cells floor: each source's cell, folded into `count`…`max` when the window emits (else absent). */
  cells?: Map<Source, SourceCell> | null
}

export interface Emission {
  readonly type: 'provisional' | 'on_time' | 'correction'
  readonly window: string
  readonly key: string
  readonly start: number
  readonly end: number
  readonly count: number
  readonly sum: number
  readonly min: number
  readonly max: number
  readonly revision: number
  readonly previous: Emission | null
}

/** Where a rules floor's emissions go: counted, and the fired values kept when the run is recorded. */
export class EmissionSink {
  emitted = 0
  readonly totals: WindowTotals | undefined

  constructor(record: boolean) {
    this.totals = record ? new Map() : undefined
  }

  emit(out: Emission[], emission: Emission): void {
    out.push(emission)
    this.emitted++
    if (this.totals !== undefined && emission.type !== 'provisional') {
      this.totals.set(windowTotalId(emission.window, emission.key, emission.start), { end: emission.end, count: emission.count, sum: emission.sum })
    }
  }
}

export function rulesLoopContender(
  batches: readonly (readonly StreamEvent[])[],
  options: RulesLoopOptions,
  clock: (batch: number) => number = () => 0,
): Contender {
  if (options.cells === true) {
    return {
      name: 'cells-loop',
      label: "cells floor: the rules floor keeping, beside each window's result, a lattice cell per source (count, sum, min, max, max ts, version) as replication needs",
      run: (context) => rulesLoop(batches, options, clock, context),
    }
  }
  return {
    name: 'rules-loop',
    label: "rules floor: one hand-written loop keeping the engine's rules (validation, future skew, dedup, watermark, lateness, late list, per-upload emission), no per-source cells",
    run: (context) => rulesLoop(batches, options, clock, context),
  }
}

function rulesLoop(
  batches: readonly (readonly StreamEvent[])[],
  options: RulesLoopOptions,
  clock: (batch: number) => number,
  { probe, record }: RunContext,
): Outcome {
  const { windows: specs, allowedLateness } = options
  const cells = options.cells === true
  const rules = new UploadRules(options)
  const sink = new EmissionSink(record)
  const bySpec = specs.map(() => new Map<string, Map<number, Window>>())
  const keysOf: string[][] = specs.map(() => [])
  const changed: { spec: number; key: string; window: Window }[] = []
  let liveWindows = 0
  for (let b = 0; b < batches.length; b++) {
    const batch = batches[b] as readonly StreamEvent[]
    rules.begin(PROCESSING_START + clock(b))
    const watermark = rules.watermark
    for (let i = 0; i < batch.length; i++) {
      const event = batch[i] as StreamEvent
      if (!rules.admit(event, i)) continue
      const { ts, value } = event
      const key = event.key ?? ''
      const source = cells ? rules.source : null
      const version = source === null ? 0 : ++source.version
      let admitted = false
      for (let s = 0; s < specs.length; s++) {
        const spec = specs[s] as FixedWindow
        const byKey = bySpec[s] as Map<string, Map<number, Window>>
        let windows = byKey.get(key)
        if (windows === undefined) {
          windows = new Map()
          byKey.set(key, windows)
          ;(keysOf[s] as string[]).push(key)
        }
        // Windows by ordinal (a small integer, as the plain loop's): the one starting at slide × ordinal.
        const lastOrdinal = Math.floor(ts / spec.slide)
        for (let ordinal = lastOrdinal - spec.size / spec.slide + 1; ordinal <= lastOrdinal; ordinal++) {
          let w = windows.get(ordinal)
          if (w === undefined) {
            const start = ordinal * spec.slide
            const end = start + spec.size
            if (end + allowedLateness <= watermark) continue
            w = { ordinal, start, end, count: 0, sum: 0, min: value, max: value, fired: end <= watermark, revision: 0, changedIn: -1, last: null, cells: cells ? new Map() : null }
            windows.set(ordinal, w)
            liveWindows++
          }
          admitted = true
          if (source !== null) foldIntoCell(source, w, ts, value, version)
          else {
            w.count++
            w.sum += value
            if (value < w.min) w.min = value
            if (value > w.max) w.max = value
          }
          if (w.changedIn !== b) {
            w.changedIn = b
            changed.push({ spec: s, key, window: w })
          }
        }
      }
      if (admitted) rules.accepted++
      else rules.refuse(event)
    }
    // The upload's changes: a provisional result per unfired window, a correction per fired one.
    const out: Emission[] = []
    for (const { spec, key, window: w } of changed) emitChange(w, (specs[spec] as FixedWindow).id, key, sink, out)
    changed.length = 0
    if (rules.end()) {
      const next = rules.watermark
      for (let s = 0; s < specs.length; s++) {
        const byKey = bySpec[s] as Map<string, Map<number, Window>>
        for (const key of keysOf[s] as string[]) {
          const windows = byKey.get(key) as Map<number, Window>
          for (const w of windows.values()) {
            if (settleWindow(w, next, allowedLateness, (specs[s] as FixedWindow).id, key, sink, out)) {
              windows.delete(w.ordinal)
              liveWindows--
            }
          }
        }
      }
    }
    probe.tick()
  }
  return rulesOutcome(rules, sink, liveWindows, bySpec)
}

/** The cells floor: `source`'s cell of `w` takes the event (the cell it wrote last needs no lookup). */
function foldIntoCell(source: Source, w: Window, ts: number, value: number, version: number): void {
  let cell = source.lastWindow === w ? source.lastCell : null
  if (cell === null) {
    const cells = w.cells as Map<Source, SourceCell>
    cell = cells.get(source) ?? null
    if (cell === null) {
      cell = { count: 0, sum: 0, min: value, max: value, maxTs: ts, version }
      cells.set(source, cell)
    }
    source.lastWindow = w
    source.lastCell = cell
  }
  cell.count++
  cell.sum += value
  if (value < cell.min) cell.min = value
  if (value > cell.max) cell.max = value
  if (ts > cell.maxTs) cell.maxTs = ts
  cell.version = version
}

/** A window the upload changed: its provisional result before it fired, a correction (the next revision) after. */
export function emitChange(w: Window, window: string, key: string, sink: EmissionSink, out: Emission[]): void {
  if (w.cells) foldCells(w)
  if (w.fired) w.revision++
  w.last = result(w.fired ? 'correction' : 'provisional', window, key, w)
  sink.emit(out, w.last)
}

/** The watermark moved to `next`: `w` fires on time once it passed its end; true when it leaves (its end plus the lateness passed too). */
export function settleWindow(w: Window, next: number, allowedLateness: number, window: string, key: string, sink: EmissionSink, out: Emission[]): boolean {
  if (!w.fired && w.end <= next) {
    if (w.cells) foldCells(w)
    w.fired = true
    w.last = result('on_time', window, key, w)
    sink.emit(out, w.last)
  }
  return w.end + allowedLateness <= next
}

/** A rules floor's outcome: its gauges and counts, the watermark, and the window totals of a recorded run. */
export function rulesOutcome(rules: UploadRules, sink: EmissionSink, liveWindows: number, windows: unknown): Outcome {
  return {
    end: { liveWindows, lateList: rules.late.length, anomalies: rules.anomalies.length },
    counts: { accepted: rules.accepted, duplicates: rules.duplicates, emitted: sink.emitted },
    watermark: rules.watermark,
    state: { rules, windows },
    ...(sink.totals === undefined ? {} : { totals: sink.totals }),
  }
}

export function result(type: Emission['type'], window: string, key: string, w: Window): Emission {
  // Only a correction carries what it replaces, as the engine's changes: results do not chain.
  return { type, window, key, start: w.start, end: w.end, count: w.count, sum: w.sum, min: w.min, max: w.max, revision: w.revision, previous: type === 'correction' ? w.last : null }
}

/** The cells floor: a window's result, folded from its sources' cells. */
function foldCells(w: Window): void {
  let count = 0
  let sum = 0
  let min = Number.POSITIVE_INFINITY
  let max = Number.NEGATIVE_INFINITY
  for (const c of (w.cells as Map<Source, SourceCell>).values()) {
    count += c.count
    sum += c.sum
    if (c.min < min) min = c.min
    if (c.max > max) max = c.max
  }
  w.count = count
  w.sum = sum
  w.min = min
  w.max = max
}
