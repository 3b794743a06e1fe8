import type { RecoveryReport } from '@tidemark/idb'

/** What the e2e page shows the test (and a person looking at it). */
export interface PageSnapshot {
  readonly source: string
  /** Events applied, restored ones included. */
  readonly applied: number
  readonly duplicates: number
  /** Sources the engine knows: 1 unless another tab's log leaked into this one. */
  readonly sources: number
  /** Highest seq whose batch is durable (committed). */
  readonly durableSeq: number
  readonly nextSeq: number
  readonly walRecords: number
  readonly persistenceError: string | null
  /** Durable promises that rejected, with their messages. */
  readonly errors: readonly string[]
  readonly online: boolean
  /** Whether the service worker serves this page (the offline reload needs it). */
  readonly controlled: boolean
}

export interface PageApi {
  readonly source: string
  readonly report: RecoveryReport | undefined
  /** Starts ingesting batches of `batch` events every `everyMs` (0: as fast as the event loop allows), up to seq `upTo` (default: until stopped). */
  start(options: { batch: number; everyMs: number; upTo?: number }): void
  stop(): void
  snapshot(): PageSnapshot
  /** Ingests the events with seq `from..to` again; resolves once durable, with the receipt totals. */
  reingest(from: number, to: number): Promise<{ accepted: number; duplicates: number }>
  /** Whether a request to the page server gets through (false when offline). */
  probeNetwork(): Promise<boolean>
  close(): Promise<void>
}

declare global {
  interface Window {
    tidemark?: PageApi
    tidemarkError?: string
    /** Exposed by the Playwright test: called with the highest durable seq of `source`. */
    reportDurable?: (source: string, seq: number) => Promise<void>
  }
}
