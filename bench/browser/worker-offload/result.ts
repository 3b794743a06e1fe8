/** What the worker-offload page leaves on `window.__offloadResult`. */
export interface OffloadResult {
  readonly scenario: string
  readonly engine: 'page' | 'worker' | 'control'
  readonly mode: string
  /** Wall ms of the measured part. */
  readonly runMs: number
  /** Events ingested by the measured part. */
  readonly events: number
  /** Intervals between animation frames during the run, ms. */
  readonly frameIntervals: readonly number[]
  /** Live windows the page can read at the end (its engine's, or its mirror's). */
  readonly windows: number
  /** `performance.now()` at the start and end of the run. */
  readonly span: readonly [number, number]
}

declare global {
  interface Window {
    __offloadResult?: OffloadResult
    __offloadError?: string
    /** Host welcome times of this page (`Date.now()`), for takeovers. */
    __offloadHosts?: { readonly instance: string; readonly at: number; readonly leader: boolean }[]
    __offloadReady?: boolean
    __offloadEngine?: unknown
  }
}
