import type { Doc } from 'yjs'
import type { Anomaly, AnomalyReason } from './anomaly.ts'
import type { ReplicaPort } from './replicaPort.ts'
import type { StreamEvent } from './event.ts'
import type { WatermarkStrategy } from './watermarkStrategy.ts'
import type { ResultQuery, WindowChange, WindowResult } from './windowResult.ts'
import type { WindowSpec } from './windowSpec.ts'

/** Bounds on every buffer; reaching one refuses input with `overflow` instead of growing. */
export interface EngineLimits {
  /** Live windows across specs and keys (default 100,000). */
  readonly maxWindows?: number
  /** Remembered event ids and out-of-order seqs across sources (default 1,000,000). */
  readonly maxDedupEntries?: number
  /** Entries kept on the late lane; older ones are trimmed and counted (default 10,000). */
  readonly maxLateEvents?: number
  /** Known sources (default 100,000). */
  readonly maxSources?: number
  /** Events in one `ingest` call (default 1,000,000). */
  readonly maxBatch?: number
}

export interface EngineOptions {
  readonly windows: WindowSpec | readonly WindowSpec[]
  /** Default `boundedOutOfOrderness(0)`. */
  readonly watermark?: WatermarkStrategy
  /** Processing-time ms after which a silent source stops holding the watermark; default Infinity. */
  readonly idleTimeout?: number
  /** Event-time ms a fired window still accepts corrections; default 0. */
  readonly allowedLateness?: number
  /** Event-time ms a final window stays in `results()` before it leaves live state; default 60,000. */
  readonly retention?: number
  /** Processing-time clock; default `Date.now`. */
  readonly now?: () => number
  readonly limits?: EngineLimits
  /** Lattice state lives here; peers' updates applied to it are merged by the engine. */
  readonly doc?: Doc
  /** This replica's id, the writer of every source it ingests; default a random UUID. */
  readonly replicaId?: string
  /** Receives replication errors (a peer with another window configuration, a rejected update); default `console.error`. */
  readonly onReplicationError?: (error: Error) => void
}

/**
 * What happened to one `ingest` batch.
 * Always `accepted + duplicates + beyondLateness + rejected === events.length`.
 */
export interface IngestReceipt {
  /** Applied to at least one window, on time or admitted late. */
  readonly accepted: number
  /** The admitted-late part of `accepted`. */
  readonly late: number
  readonly duplicates: number
  /** Admitted by no window; kept on the late lane. */
  readonly beyondLateness: number
  /** Invalid input or refused by a full buffer (`overflow`). */
  readonly rejected: number
  /** One entry per rejected event. */
  readonly anomalies: readonly Anomaly[]
  /** Resolves once the batch is durable (committed to the write-ahead log, or at once without one). */
  readonly durable: Promise<void>
}

/** An event that a window refused, and why. */
export interface LateEvent {
  readonly event: StreamEvent
  /** Id of the window spec that refused it, when one did. */
  readonly window?: string
  readonly reason: AnomalyReason
}

export interface EngineStats {
  readonly ingested: number
  readonly applied: number
  readonly duplicates: number
  readonly anomalies: Readonly<Record<AnomalyReason, number>>
  readonly lateAdmitted: number
  readonly beyondLateness: number
  /** Events in windows that have not fired yet (waiting for completeness). */
  readonly pending: number
  readonly openWindows: number
  readonly cells: number
  readonly sources: number
  readonly dedupEntries: number
  readonly lateLane: number
  readonly lateLaneTrimmed: number
  readonly corrections: number
  readonly watermark: number
  /** Proof frontier P (DESIGN §2). */
  readonly proofFrontier: number
  /** Largest event time seen minus the watermark (0 when nothing is held back). */
  readonly watermarkLag: number
  readonly finalityViolations: number
  readonly docBytes: number
  readonly walRecords: number
  readonly walBytes: number
  /** Last error the write-ahead log reported (quota, corruption), or null. */
  readonly persistenceError: string | null
  /** Last replication error (for example a peer with another window configuration), or null. */
  readonly replicationError: string | null
  /** The last (up to 20) anomalies found in peers' state, with details. */
  readonly remoteAnomalies: readonly string[]
}

/** Connection state for the UI; an engine with no provider reports `local`. */
export interface SyncStatus {
  readonly state: 'local' | 'connecting' | 'connected' | 'offline'
  readonly lastSync: number | null
  readonly pendingLocalUpdates: number
  readonly peers: number
}

/** The event-time window engine (DESIGN §8). */
export interface Engine {
  ingest(events: readonly StreamEvent[]): IngestReceipt
  advanceWatermark(t: number): void
  tick(): void
  results(query?: ResultQuery): readonly WindowResult[]
  /** Called synchronously after every batch, watermark move or tick, with the window changes it caused (possibly none). */
  subscribe(listener: (changes: readonly WindowChange[]) => void): () => void
  watermark(): number
  lateEvents(): readonly LateEvent[]
  stats(): EngineStats
  syncStatus(): SyncStatus
  /** Every on-time value and correction this engine emitted for one window, oldest first. */
  history(window: string, key: string, start: number): readonly WindowResult[]
  readonly writable: WritableStream<readonly StreamEvent[]>
  changes(): ReadableStream<readonly WindowChange[]>
  /** The replication side (what a Yjs binding or another transport drives). */
  readonly replica: ReplicaPort
  close(): Promise<void>
}
