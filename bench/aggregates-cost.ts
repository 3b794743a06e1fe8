/**
 * aggregates-cost: what aggregates cost the engine, in one process.
 *
 * - Ingest: streaming-100k's workload (100k readings, 50 devices, 10% up to 90 s late, 2% re-sent,
 *   uploads of 500; tumbling 1 min, out-of-orderness 10 s, lateness 60 s) through the engine
 *   without aggregates and through the same engine keeping `quantiles` (p50, p95, p99) and
 *   `distinct` (devices). Target: the sketched engine keeps ≥ 50% of the plain one's throughput.
 * - Fleet: the same workload from 500 devices (100 per key, so 100 cells per window) with and
 *   without the same two aggregates: what a window of many sources costs when each pane reads
 *   its sketches (a slice keeps its cells' states folded, and adds its own events to that fold).
 * - Sliding: sliding-1h-1m's workload (100k readings, 50 devices × 4 metrics every 20 s; one hour
 *   sliding every minute, 60 windows per reading) with and without the same two aggregates: every
 *   early pane merges its window's slice states, so this is where sketches cost the most.
 * - Join: a fresh replica bound to a Y.Doc applies one update holding 8 writer replicas × 10k
 *   cells (100 keys × 100 one-minute windows, 2 readings per cell; merge-8-replicas' state), with
 *   the same two aggregates, beside the same join without them: elapsed time, and the encoded
 *   doc's bytes per cell with and without sketches.
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/aggregates-cost.ts
 */
import {
  boundedOutOfOrderness,
  createEngine,
  sliding,
  distinct,
  type EngineOptions,
  manual,
  quantiles,
  type StreamEvent,
  tumbling,
} from '@tidemark/engine'
import { bindDoc } from '@tidemark/yjs'
import * as Y from 'yjs'
import type { Contender, Outcome } from './harness/contender.ts'
import type { ProfileDefinition } from './harness/profile.ts'
import { runProfileCli } from './harness/profile.ts'
import { writerEvents } from './merge-8-replicas.ts'
import { isMain } from './measure.ts'
import { tidemarkContender } from './peers/tidemark.ts'
import { deviceStream, eventCount, metricFleet } from './workload.ts'

const MINUTE = 60_000
const T0 = 1_700_000_000_000 - (1_700_000_000_000 % MINUTE)
const WRITERS = 8

/** The aggregates measured: three quantiles of one sketch, and a distinct count of devices. */
export const SKETCHES = {
  latency: quantiles({ at: [0.5, 0.95, 0.99], relativeAccuracy: 0.01 }),
  devices: distinct({ of: (event) => event.source }),
}

/** The join's writers: each ingests its 10k cells' readings with a doc bound; one update per writer. */
function writerUpdates(sketched: boolean): { update: Uint8Array; cells: number; docBytes: number } {
  const updates: Uint8Array[] = []
  let cells = 0
  let docBytes = 0
  for (let i = 0; i < WRITERS; i++) {
    const doc = new Y.Doc()
    const engine = createEngine({ windows: tumbling(MINUTE), watermark: manual(), retention: Number.POSITIVE_INFINITY, replicaId: `w${i}`, now: () => T0, ...(sketched ? { aggregates: SKETCHES } : {}) })
    bindDoc(engine, doc)
    engine.ingest(writerEvents(`d${i}`))
    const update = Y.encodeStateAsUpdate(doc)
    updates.push(update)
    cells += engine.stats().cells
    docBytes += update.byteLength
    void engine.close()
  }
  return { update: Y.mergeUpdates(updates), cells, docBytes }
}

function joinContender(sketched: boolean): Contender {
  const { update, cells, docBytes } = writerUpdates(sketched)
  return {
    name: sketched ? 'join-sketched' : 'join-plain',
    label: `a fresh replica bound with bindDoc applies one update of ${WRITERS} writers × 10k cells${sketched ? ', with quantiles and distinct states in every cell' : ', without aggregates'}`,
    run: (): Outcome => {
      const doc = new Y.Doc()
      const engine = createEngine({ windows: tumbling(MINUTE), watermark: manual(), retention: Number.POSITIVE_INFINITY, replicaId: 'reader', now: () => T0, ...(sketched ? { aggregates: SKETCHES } : {}) })
      bindDoc(engine, doc)
      Y.applyUpdate(doc, update, 'peer')
      const stats = engine.stats()
      return {
        end: { liveWindows: stats.openWindows, cells: stats.cells, [sketched ? 'bytesPerCellSketched' : 'bytesPerCell']: Math.round(docBytes / cells) },
        counts: { invalidRemote: stats.anomalies.invalid_remote_cell },
        state: engine,
        close: () => void engine.close(),
      }
    },
  }
}

export function define(): ProfileDefinition {
  const batches: readonly (readonly StreamEvent[])[] = deviceStream({
    events: 100_000,
    sources: 50,
    lateShare: 0.1,
    duplicateShare: 0.02,
    spacing: 1_000,
    lateBy: 90_000,
    seed: 42,
    batchSize: 500,
  })
  const options: Omit<EngineOptions, 'now'> = { windows: [tumbling(MINUTE)], watermark: boundedOutOfOrderness(10_000), allowedLateness: 60_000 }
  const fleetBatches = deviceStream({ events: 100_000, sources: 500, lateShare: 0.1, duplicateShare: 0.02, spacing: 1_000, lateBy: 90_000, seed: 42, batchSize: 500 })
  const slidingBatches = metricFleet({ events: 100_000, sources: 50, metrics: 4, spacing: 20_000, lateShare: 0.05, lateBy: 2 * MINUTE, seed: 61, batchSize: 500 })
  const slidingOptions: Omit<EngineOptions, 'now'> = { windows: [sliding(60 * MINUTE, MINUTE)], watermark: boundedOutOfOrderness(MINUTE), allowedLateness: 5 * MINUTE }
  return {
    name: 'aggregates-cost',
    description: 'streaming-100k (from 50 and from 500 devices) and sliding-1h-1m ingested with and without quantiles + distinct; the one-update join of 8 replicas × 10k cells with and without them',
    events: eventCount(batches),
    batches: batches.length,
    contenders: [
      tidemarkContender(batches, options),
      tidemarkContender(batches, { ...options, aggregates: SKETCHES } as Omit<EngineOptions, 'now'>, {
        name: 'tidemark-sketched',
        label: 'the same engine keeping quantiles (p50, p95, p99) and distinct (devices) in every cell and window',
      }),
      tidemarkContender(fleetBatches, options, {
        name: 'fleet',
        label: "streaming-100k's workload from 500 devices (100 per key), without aggregates",
      }),
      tidemarkContender(fleetBatches, { ...options, aggregates: SKETCHES } as Omit<EngineOptions, 'now'>, {
        name: 'fleet-sketched',
        label: "streaming-100k's workload from 500 devices (100 per key), with quantiles and distinct",
      }),
      tidemarkContender(slidingBatches, slidingOptions, {
        name: 'sliding',
        label: "sliding-1h-1m's readings and windows, without aggregates",
      }),
      tidemarkContender(slidingBatches, { ...slidingOptions, aggregates: SKETCHES } as Omit<EngineOptions, 'now'>, {
        name: 'sliding-sketched',
        label: "sliding-1h-1m's readings and windows, with quantiles and distinct",
      }),
      joinContender(false),
      joinContender(true),
    ],
    ratios: [
      {
        name: 'sketched/plain',
        label: 'ingest throughput with quantiles and distinct, as a share of the same engine without them',
        subject: 'tidemark-sketched',
        reference: 'tidemark',
        format: 'percent',
        target: 0.5,
      },
      {
        name: 'fleet-sketched/plain',
        label: 'the same from 500 devices (100 cells per window) with quantiles and distinct, as a share of the same without',
        subject: 'fleet-sketched',
        reference: 'fleet',
        format: 'percent',
      },
      {
        name: 'sliding-sketched/plain',
        label: 'sliding 1 h every 1 min with quantiles and distinct, as a share of the same without',
        subject: 'sliding-sketched',
        reference: 'sliding',
        format: 'percent',
      },
      {
        name: 'join-sketched/plain',
        label: 'the 8 × 10k join with sketches, as a share of the same join without',
        subject: 'join-sketched',
        reference: 'join-plain',
        format: 'percent',
      },
    ],
    agree: [
      ['tidemark', 'tidemark-sketched'],
      ['fleet', 'fleet-sketched'],
      ['sliding', 'sliding-sketched'],
    ],
    showTimes: true,
    showGauges: ['bytesPerCell', 'bytesPerCellSketched'],
    rounds: 5,
  }
}

if (isMain(import.meta.url)) await runProfileCli(define)
