/**
 * The engine's side of its write-ahead log: the one log it writes (none in memory), the
 * operations it records there, and the last write the log refused, which `stats()` shows as
 * `persistenceError` until another replaces it.
 */
import type { AnomalyReason } from '../input/anomaly.ts'
import { messageOf } from '../errors/errorMessage.ts'
import type { WalOp, WriteAheadLog } from './writeAheadLog.ts'

/** What an operation resolves with when there is nothing to make durable. */
export const DURABLE: Promise<void> = Promise.resolve()

/**
 * One engine's journal. `changed` runs when what `stats()` shows of the log changed without a
 * batch: a write failed, or the log reports new figures (a checkpoint truncated it).
 *
 * @example
 * const journal = new EngineJournal(() => feed.publish([]))
 * journal.attach(wal)
 * const durable = journal.record({ kind: 'advance', to: 60_000 })
 */
export class EngineJournal {
  /** The log every later operation is recorded in, or null. */
  wal: WriteAheadLog | null = null
  /** The message of the last write the log refused, or null. */
  error: string | null = null
  readonly #changed: () => void
  /** Per source finished here, its `finish` record's promise, null once that failed (one a source, so bounded as sources are). */
  readonly #finishes = new Map<string, Promise<void> | null>()

  constructor(changed: () => void) {
    this.#changed = changed
  }

  /** Records every later operation in `wal`; an engine has at most one log. */
  attach(wal: WriteAheadLog): void {
    if (this.wal !== null) throw new Error('engine already has a write-ahead log')
    this.wal = wal
    wal.watch?.(this.#changed)
  }

  /** Records `op` in the log (call only with one attached); resolves once it is durable. */
  record(op: WalOp): Promise<void> {
    const durable = (this.wal as WriteAheadLog).record(op)
    durable.catch((error: unknown) => {
      const message = messageOf(error)
      if (message === this.error) return
      this.error = message
      // Set after the batch was published: views of the stats hear of it now.
      this.#changed()
    })
    return durable
  }

  /**
   * Records `finishSource(source)` at `now` (call only with a log attached); resolves once
   * durable. `finished(source)` answers with the same promise from then on.
   *
   * @example
   * const durable = journal.finish('d1', now)
   * journal.finished('d1') === durable // true
   */
  finish(source: string, now: number): Promise<void> {
    const durable = this.record({ kind: 'finish', source, now })
    this.#finishes.set(source, durable)
    durable.catch(() => {
      if (this.#finishes.get(source) === durable) this.#finishes.set(source, null)
    })
    return durable
  }

  /**
   * How durable the finish of an already finished `source` is: the promise of the record that
   * finished it while pending or committed, else resolved (replayed, restored, or no log). A
   * record that failed is written again at `now` (rejected at once while the log refuses
   * writes), so that finishing again is how a caller retries.
   */
  finished(source: string, now: number): Promise<void> {
    const durable = this.#finishes.get(source)
    if (durable === undefined || this.wal === null) return DURABLE
    if (durable !== null) return durable
    return this.wal.blocked !== null ? Promise.reject(this.wal.blocked) : this.finish(source, now)
  }

  /** Records `n` inputs refused for `reason` outside any replayed op, as counts only (nothing once `closed`); resolves once durable. */
  refused(reason: AnomalyReason, n: number, closed: boolean): Promise<void> {
    return this.wal === null || n === 0 || closed ? DURABLE : this.record({ kind: 'refuse', rejected: { [reason]: n } })
  }
}
