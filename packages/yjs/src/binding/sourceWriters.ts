import type { ClockEntry } from '@tidemark/engine'
import { preview } from '../schema/docEntry.ts'

/**
 * Which remote replicas write each source, from the clocks their logs hold: two of them writing
 * one source is reported once, when the second appears. Conflicts that involve this replica are
 * the engine's to report (`MergeReport.conflicts`), so they are not counted twice.
 *
 * @example
 * const writers = new SourceWriters('tab-1', (detail) => port.reportAnomaly('source_conflict', detail))
 * writers.note(clock) // reports "source 'd1' is written by replicas 'a', 'b'" on the second writer
 */
export class SourceWriters {
  readonly #replicaId: string
  readonly #report: (detail: string) => void
  readonly #writers = new Map<string, Set<string>>()

  constructor(replicaId: string, report: (detail: string) => void) {
    this.#replicaId = replicaId
    this.#report = report
  }

  /** Notes that `clock.writer` writes `clock.source`. */
  note(clock: ClockEntry): void {
    if (clock.writer === this.#replicaId) return
    let writers = this.#writers.get(clock.source)
    if (writers === undefined) {
      writers = new Set()
      this.#writers.set(clock.source, writers)
    }
    if (writers.has(clock.writer)) return
    writers.add(clock.writer)
    if (writers.size > 1) this.#report(`source ${preview(clock.source)} is written by replicas ${[...writers].map(preview).join(', ')}`)
  }
}
