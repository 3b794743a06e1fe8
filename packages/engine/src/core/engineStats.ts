import type { DedupMemory } from '../windows/dedupMemory.ts'
import type { EngineStats } from './engineApi.ts'
import type { FutureSources } from '../input/futureSources.ts'
import type { LateLane } from '../windows/lateLane.ts'
import type { AnomalyReason } from '../input/anomaly.ts'
import type { EngineJournal } from '../recovery/engineJournal.ts'
import type { EnginePort } from '../replica/enginePort.ts'
import type { RemoteAnomalies } from '../replica/remoteAnomalies.ts'
import type { Frontiers } from '../time/frontiers.ts'
import { windowGauges } from '../windows/liveWindows.ts'
import type { WindowIndex } from '../windows/windowIndex.ts'
import type { WindowLifecycle } from '../windows/windowLifecycle.ts'

/** The engine's running counts, as `stats()` reports them (the engine adds to them). */
export type EngineCounts = { -readonly [K in 'ingested' | 'applied' | 'duplicates' | 'lateAdmitted' | 'beyondLateness' | 'finalityViolations']: number }

/** What `stats()` reads: the engine's parts, each read, none changed. */
export interface StatsParts {
  readonly counts: EngineCounts
  readonly anomalies: Record<AnomalyReason, number>
  readonly frontiers: Frontiers
  readonly indexes: readonly WindowIndex[]
  readonly lifecycle: WindowLifecycle
  readonly dedup: DedupMemory
  readonly lateLane: LateLane
  readonly futureSources: FutureSources
  readonly journal: EngineJournal
  readonly port: EnginePort
  readonly remoteAnomalies: RemoteAnomalies
}

/**
 * One engine's `stats()`: counters and gauges, copied, so the caller may keep them.
 *
 * @example
 * const stats = engineStats(parts)
 * stats.watermarkLag // max ts seen − W
 */
export function engineStats(parts: StatsParts): EngineStats {
  const f = parts.frontiers
  const wal = parts.journal.wal?.stats()
  const holders = f.holders()
  return {
    ...parts.counts,
    corrections: parts.lifecycle.corrections,
    anomalies: { ...parts.anomalies },
    ...windowGauges(parts.indexes),
    sources: f.sources.size,
    finishedSources: f.finishedSources,
    idleSources: f.idleSources,
    dedupEntries: parts.dedup.entries,
    lateLane: parts.lateLane.size,
    lateLaneTrimmed: parts.lateLane.trimmed,
    watermark: f.watermark,
    proofFrontier: f.proof,
    watermarkLag: f.maxTs > f.watermark ? f.maxTs - f.watermark : 0,
    proofHeldBy: holders.proof,
    watermarkHeldBy: holders.watermark,
    docBytes: parts.port.docBytes,
    walRecords: wal?.walRecords ?? 0,
    walBytes: wal?.walBytes ?? 0,
    persistenceError: parts.journal.error,
    replicationError: parts.port.error,
    remoteAnomalies: parts.remoteAnomalies.list(),
    futureSources: parts.futureSources.list(),
    timers: parts.lifecycle.timers,
  }
}
