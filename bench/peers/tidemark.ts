/**
 * Tidemark's window engine as a contender: one `createEngine` per run, every batch through
 * `ingest`, one subscriber that consumes the changes (as a dashboard would).
 */
import { createEngine, type Engine, type EngineOptions, type StreamEvent } from '@tidemark/engine'
import type { Contender, Outcome, RunContext, WindowTotals } from '../harness/contender.ts'
import { windowTotalId } from '../harness/contender.ts'

/**
 * Processing time of the first batch: the fleets' first readings (workload.ts), so event and
 * processing time run side by side and no reading is ahead of the clock (`maxFutureSkew`).
 */
export const PROCESSING_START = 1_700_000_000_000

/**
 * The engine a contender builds unless its options name another: `createEngine` from the source
 * tree. A script comparing two builds of the engine in one process (interleaved rounds, as the
 * README asks) swaps `create` around a contender's run.
 */
export const engineBuild: { create: (options: EngineOptions) => Engine } = { create: createEngine }

export interface TidemarkRunOptions {
  /** Processing time (ms after the fleet's start) at which batch `i` is ingested; default 0 for every batch. */
  readonly clock?: (batch: number) => number
  /** Call `tick()` after every batch (processing-time triggers fire there). */
  readonly tick?: boolean
  /** The engine to run (default `createEngine`): another placement, or another build of the engine. */
  readonly create?: (options: EngineOptions) => Engine
  readonly name?: string
  readonly label?: string
}

export function tidemarkContender(
  batches: readonly (readonly StreamEvent[])[],
  options: Omit<EngineOptions, 'now'>,
  run: TidemarkRunOptions = {},
): Contender {
  return {
    name: run.name ?? 'tidemark',
    label: run.label ?? 'Tidemark createEngine: ingest per batch, one subscriber consuming the changes',
    run: (context) => runEngine(batches, options, run, context),
  }
}

function runEngine(
  batches: readonly (readonly StreamEvent[])[],
  options: Omit<EngineOptions, 'now'>,
  { clock, tick, create = engineBuild.create }: TidemarkRunOptions,
  { probe, record }: RunContext,
): Outcome {
  let now = PROCESSING_START
  const engine = create({ ...options, now: () => now })
  let changes = 0
  const totals: WindowTotals | undefined = record ? new Map() : undefined
  engine.subscribe((batchChanges) => {
    changes += batchChanges.length
    if (totals === undefined) return
    for (const change of batchChanges) {
      if (change.type === 'provisional') continue
      const r = change.result
      const id = windowTotalId(r.window, r.key, r.start)
      // A session merged into another, or moved to an earlier start, no longer exists under this id.
      if (change.type === 'retract') totals.delete(id)
      else totals.set(id, { end: r.end, count: r.count, sum: r.sum })
    }
  })
  let accepted = 0
  let late = 0
  let duplicates = 0
  let beyondLateness = 0
  let rejected = 0
  for (let i = 0; i < batches.length; i++) {
    if (clock !== undefined) now = PROCESSING_START + clock(i)
    const receipt = engine.ingest(batches[i] as readonly StreamEvent[])
    if (tick === true) engine.tick()
    accepted += receipt.accepted
    late += receipt.late
    duplicates += receipt.duplicates
    beyondLateness += receipt.beyondLateness
    rejected += receipt.rejected
    probe.tick()
  }
  const stats = engine.stats()
  const outcome: Outcome = {
    end: {
      pending: stats.pending,
      liveWindows: stats.openWindows,
      cells: stats.cells,
      dedupEntries: stats.dedupEntries,
      lateLane: stats.lateLane,
      watermarkLagMs: stats.watermarkLag,
    },
    counts: { accepted, late, duplicates, beyondLateness, rejected, changes, corrections: stats.corrections },
    watermark: stats.watermark,
    liveModel: () => liveWindowModel(engine),
    state: engine,
    close: () => void engine.close(),
  }
  return totals === undefined ? outcome : { ...outcome, totals }
}

interface ModelCell {
  count: number
  sum: number
  min: number
  max: number
  maxTs: number
  version: number
}

const SOURCE_NAMES = Array.from({ length: 4096 }, (_, i) => `source-${i}`)

/**
 * The least a window engine must hold for its live windows: per live window its current result
 * and one cell per contributing source, in nested Maps. Built from `results()` and the engine's
 * cell count (cells spread evenly over the windows), so its heap size is a yardstick for the
 * retained heap: what the engine keeps beyond it is dedup memory, the late lane, history and
 * bookkeeping.
 */
function liveWindowModel(engine: Engine): unknown {
  const results = engine.results()
  const cells = engine.stats().cells
  const model = new Map<string, Map<string, Map<number, { result: object; cells: Map<string, ModelCell> }>>>()
  let assigned = 0
  for (let i = 0; i < results.length; i++) {
    const result = results[i] as (typeof results)[number]
    let byKey = model.get(result.window)
    if (byKey === undefined) {
      byKey = new Map()
      model.set(result.window, byKey)
    }
    let byStart = byKey.get(result.key)
    if (byStart === undefined) {
      byStart = new Map()
      byKey.set(result.key, byStart)
    }
    const windowCells = new Map<string, ModelCell>()
    const target = Math.round((cells * (i + 1)) / results.length)
    for (; assigned < target; assigned++) {
      windowCells.set(SOURCE_NAMES[windowCells.size % SOURCE_NAMES.length] as string, {
        // Doubles where the engine has doubles: each costs a heap number, as it does there.
        count: 1,
        sum: 0.5,
        min: 0.5,
        max: 0.5,
        maxTs: 1_700_000_000_000.5,
        version: 1,
      })
    }
    byStart.set(result.start, { result: { ...result }, cells: windowCells })
  }
  return model
}
