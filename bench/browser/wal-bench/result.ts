/** One contender's timing in the page. */
export interface Timing {
  readonly name: string
  readonly ms: number
  readonly events: number
  /** Bytes written (the log's own count), when known. */
  readonly bytes?: number
  /** Anything worth printing beside the time (replayed events, checkpoint lsn, ...). */
  readonly note?: string
}

export interface PageOutcome {
  readonly timings: readonly Timing[]
}

declare global {
  interface Window {
    __walBench?: PageOutcome
    __walBenchError?: string
  }
}
