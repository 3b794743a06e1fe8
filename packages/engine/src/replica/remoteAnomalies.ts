import type { AnomalyReason } from '../input/anomaly.ts'

/** Peers' state problems: counted by reason, and their details kept, newest last, bounded (`stats().remoteAnomalies`). */
export class RemoteAnomalies {
  readonly #counts: Record<AnomalyReason, number>
  readonly #details: string[] = []

  constructor(counts: Record<AnomalyReason, number>) {
    this.#counts = counts
  }

  /** Counts `n` anomalies of `reason` (default 1) and keeps their detail. */
  report(reason: 'invalid_remote_cell' | 'source_conflict' | 'overflow', detail: string, n = 1): void {
    // The detail first: one that cannot be made text throws before anything is counted.
    this.#details.push(`${reason}: ${detail}`)
    this.#counts[reason] += n
    if (this.#details.length > 20) this.#details.shift()
  }

  list(): string[] {
    return [...this.#details]
  }
}
