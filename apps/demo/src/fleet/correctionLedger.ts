import type { WindowChange } from '@tidemark/engine'
import { type LateCorrection, lateCorrectionsOf } from './reconnectReport.ts'

/** Late corrections the late-data table lists. */
const LATE_CORRECTIONS_KEPT = 60
/** Windows whose counted revision is remembered before the old ones are let go. */
const CORRECTED_KEPT = 2_000

/**
 * The dashboard's corrections, each counted once: by its window and revision. The page's mirror
 * may hand a window's latest result out again as a change (when its history arrives, or when a
 * new dashboard host's state replaces the mirror), and that is no new correction. Keeps the
 * newest late corrections for the late-data table.
 *
 * @example
 * const ledger = new CorrectionLedger()
 * const fresh = ledger.fresh(changes)
 * if (fresh.length > 0) ledger.record(fresh, now, () => watermark - spanMs)
 * ledger.lateCorrections // newest first
 */
export class CorrectionLedger {
  /** The last revision of each window counted as a correction (`window|key|start`). */
  readonly #corrected = new Map<string, number>()
  #late: readonly LateCorrection[] = []

  /** Windows changed by state that landed after they fired, newest first. */
  get lateCorrections(): readonly LateCorrection[] {
    return this.#late
  }

  /** The corrections among `changes` not counted before; they are counted now. */
  fresh(changes: readonly WindowChange[]): WindowChange[] {
    const fresh: WindowChange[] = []
    for (const change of changes) {
      if (change.type !== 'correction') continue
      const { window, key, start, revision } = change.result
      const at = `${window}|${key}|${start}`
      if (revision <= (this.#corrected.get(at) ?? 0)) continue
      this.#corrected.set(at, revision)
      fresh.push(change)
    }
    return fresh
  }

  /**
   * Lists fresh corrections in the late-data table. `horizon` (asked only when many windows are
   * remembered) is the start before which a window is never corrected again here.
   */
  record(fresh: readonly WindowChange[], now: number, horizon: () => number): void {
    this.#late = [...lateCorrectionsOf(fresh, now).reverse(), ...this.#late].slice(0, LATE_CORRECTIONS_KEPT)
    if (this.#corrected.size > CORRECTED_KEPT) {
      const before = horizon()
      for (const at of this.#corrected.keys()) if (Number(at.split('|')[2]) < before) this.#corrected.delete(at)
    }
  }

  /** Forgets the revisions counted: a new dashboard engine numbers its own. */
  forgetRevisions(): void {
    this.#corrected.clear()
  }

  /** Empties the late-data table. */
  clearLate(): void {
    this.#late = []
  }
}
