/**
 * The durable ledger: every batch a device reported as durable (committed to its write-ahead
 * log), collected in the driver through the `tidemarkStormReport` binding. It outlives the pages, so
 * after a crash it still says what the device had acknowledged.
 */
import type { BrowserContext } from '@playwright/test'
import { STORM_REPORT_BINDING, type StormBatchReport } from '../contract/stormPageApi.ts'

/**
 * What a source's reports add up to, and what is wrong with them.
 *
 * @example
 * const totals: LedgerTotals = ledger.totals(new Map([[source, 1_000]]))
 * expect(totals.gaps).toEqual([])
 */
export interface LedgerTotals {
  /** Seqs covered by reports. */
  readonly produced: number
  readonly accepted: number
  readonly beyondLateness: number
  readonly duplicates: number
  readonly rejected: number
  /** Seqs missing between `firstSeq` and `lastSeq`, or reported twice, one line each. */
  readonly gaps: readonly string[]
}

/**
 * Collects durable batch reports by source.
 *
 * @example
 * const ledger = new StormLedger()
 * await ledger.listen(context)              // before the page opens
 * // ... the device ingests ...
 * ledger.durable(source)                    // highest seq acknowledged as durable
 * ledger.totals(new Map([[source, 1_000]])) // { produced: 1000, ..., gaps: [] }
 */
export class StormLedger {
  readonly batches = new Map<string, StormBatchReport[]>()

  /** Exposes the report binding (`tidemarkStormReport`) on `context`; call before its pages load. */
  async listen(context: BrowserContext): Promise<void> {
    await context.exposeBinding(STORM_REPORT_BINDING, (_source, reports: readonly StormBatchReport[]) => this.record(reports))
  }

  /** Records `reports` (what the binding does with every call). */
  record(reports: readonly StormBatchReport[]): void {
    for (const report of reports) {
      const list = this.batches.get(report.source) ?? []
      list.push(report)
      this.batches.set(report.source, list)
    }
  }

  /** Highest seq of `source` reported durable (0 when none). */
  durable(source: string): number {
    let high = 0
    for (const batch of this.batches.get(source) ?? []) high = Math.max(high, batch.to)
    return high
  }

  /**
   * Totals over the reports of each source in `lastSeq`, checking that they cover
   * `firstSeq..lastSeq` (default from 1) exactly once.
   */
  totals(lastSeq: ReadonlyMap<string, number>, firstSeq: ReadonlyMap<string, number> = new Map()): LedgerTotals {
    let produced = 0
    let accepted = 0
    let beyondLateness = 0
    let duplicates = 0
    let rejected = 0
    const gaps: string[] = []
    for (const [source, last] of lastSeq) {
      const first = firstSeq.get(source) ?? 1
      const list = (this.batches.get(source) ?? []).filter((b) => b.to >= first && b.from <= last).sort((a, b) => a.from - b.from)
      let next = first
      for (const batch of list) {
        if (batch.from > next) gaps.push(`${source}: seqs ${next}..${batch.from - 1} never reported durable`)
        if (batch.from < next) gaps.push(`${source}: seqs ${batch.from}..${Math.min(batch.to, next - 1)} reported durable twice`)
        next = Math.max(next, batch.to + 1)
        produced += batch.to - batch.from + 1
        accepted += batch.accepted
        beyondLateness += batch.beyondLateness
        duplicates += batch.duplicates
        rejected += batch.rejected
      }
      if (next !== last + 1) gaps.push(`${source}: produced up to ${last}, durable reports end at ${next - 1}`)
    }
    return { produced, accepted, beyondLateness, duplicates, rejected, gaps }
  }
}
