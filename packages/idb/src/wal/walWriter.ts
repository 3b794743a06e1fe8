import type { LocalWrite, WalOp, WriteAheadLog } from '@tidemark/engine'
import { cellCount, messageOf, reportListenerError } from '@tidemark/engine/adapter'
import { DurableFrontier } from './durableFrontier.ts'
import { isFencedError } from '../persistence/fencedError.ts'
import type { CheckpointPolicy, LateLaneSnapshot, Persistence } from '../persistence/persistence.ts'

/** Delays between attempts to recover from a failed write: the first, doubling up to the last. */
export interface WriteRetry {
  readonly firstMs: number
  readonly maxMs: number
}

/**
 * Timers the write-ahead log arms its write retries with (`openEngine`'s `timers` option);
 * `setTimeout` and `clearTimeout` fit. A test gives fake ones and moves their time itself.
 *
 * @example
 * const timers: WriteRetryTimers = { setTimeout: (run, ms) => setTimeout(run, ms), clearTimeout: (handle) => clearTimeout(handle as number) }
 */
export interface WriteRetryTimers {
  /** Runs `run` once, `ms` from now; returns what `clearTimeout` takes. */
  setTimeout(run: () => void, ms: number): unknown
  /** Cancels a timer `setTimeout` returned, if it has not run. */
  clearTimeout(handle: unknown): void
}

/** The global timers; a pending retry does not keep a Node process alive on its own. */
export const GLOBAL_RETRY_TIMERS: WriteRetryTimers = {
  setTimeout(run, ms) {
    const timer = setTimeout(run, ms)
    ;(timer as { unref?: () => void }).unref?.()
    return timer
  },
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
}

export interface WalWriterOptions {
  readonly persistence: Persistence
  readonly policy: CheckpointPolicy
  readonly retry: WriteRetry
  /** Where retries are armed. */
  readonly timers: WriteRetryTimers
  /** Processing-time clock, for the checkpoint cadence. */
  readonly now: () => number
  /** The engine's state now, encoded, and its late lane; every op recorded so far is in it. */
  readonly snapshot: () => { readonly state: Uint8Array; readonly lateLane?: LateLaneSnapshot }
  /**
   * The log tail recovered at open, after its checkpoint: its records, and what they count
   * toward `policy.events` (`checkpointEvents` of each). Both count toward the next checkpoint
   * as live operations do, so `close()` checkpoints after a tail of advances or ticks too.
   */
  readonly tail: { readonly records: number; readonly events: number }
  /** Checkpoint on `close()` when the log holds operations after the last checkpoint. */
  readonly checkpointOnClose: boolean
}

/**
 * The engine's journal over a `Persistence` (docs/durability.md): every operation becomes one
 * record, appended as it is recorded; checkpoints follow the policy and truncate the log.
 *
 * A failed write (full quota, lost source claim, closed database) leaves a hole in the
 * log, so the journal blocks: the engine refuses new batches with `overflow`, and their
 * `durable` rejects with the error. The journal then retries a checkpoint, with backoff.
 * A checkpoint holds the whole state, the refused batch's effects included, so once one
 * commits the log is whole again (and the truncation behind it freed space) and ingest
 * resumes. A failed checkpoint (its write, or its encoding) leaves no hole (the log still holds
 * every record): it does not block, and is retried the same way.
 *
 * A write refused with `FencedError` (another writer owns the log) blocks it for good: no
 * checkpoint is tried again, since its truncation would delete what that writer committed.
 */
export class WalWriter implements WriteAheadLog {
  readonly #options: WalWriterOptions
  #blocked: Error | null = null
  /** A write was fenced: another writer owns the log, and this journal writes nothing more. */
  #fenced = false
  /** Highest lsn whose write failed and that no committed checkpoint covers yet. */
  #holeAt = 0
  #lastError: string | null = null
  #eventsSinceCheckpoint: number
  #opsSinceCheckpoint: number
  #checkpointedAt: number
  #checkpointDue = false
  #checkpointing: Promise<boolean> | null = null
  #retryDelay: number
  /** The armed retry (its handle from `timers.setTimeout`), or null. */
  #retryTimer: { handle: unknown } | null = null
  #closed = false
  /** Told each time what `stats()` and `lastError` report changed outside a batch (`watch`). */
  #changed: () => void = () => {}
  /** Writes for peers wait here until the op that made them is durable; what the log held when opened already is. */
  readonly #durable: DurableFrontier<{ readonly write: LocalWrite; readonly deliver: (write: LocalWrite) => void }>

  constructor(options: WalWriterOptions) {
    this.#options = options
    this.#durable = new DurableFrontier(({ write, deliver }) => {
      try {
        deliver(write)
      } catch (error) {
        // A peer-side listener threw: the host hears of it, the journal goes on with the next write.
        reportListenerError(error)
      }
    }, options.persistence.lastLsn)
    this.#eventsSinceCheckpoint = options.tail.events
    this.#opsSinceCheckpoint = options.tail.records
    this.#checkpointedAt = options.now()
    this.#retryDelay = options.retry.firstMs
  }

  get blocked(): Error | null {
    return this.#blocked
  }

  watch(changed: () => void): void {
    this.#changed = changed
  }

  /** The last write error, kept after the journal unblocked. */
  get lastError(): string | null {
    return this.#lastError
  }

  record(op: WalOp): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the write-ahead log is closed'))
    // Encodes and numbers the record now; the caller may reuse `op` once this returns.
    const { persistence } = this.#options
    let appended: Promise<number>
    try {
      appended = persistence.append(op)
    } catch (error) {
      // A persistence that throws instead of rejecting still must not throw into the engine mid-batch.
      appended = Promise.reject(error)
    }
    const lsn = persistence.lastLsn
    this.#durable.recorded(lsn)
    this.#opsSinceCheckpoint++
    this.#eventsSinceCheckpoint += checkpointEvents(op)
    if (this.#due()) this.#scheduleCheckpoint()
    return appended.then(
      () => {
        this.#durable.committed(lsn)
      },
      (error: unknown) => {
        this.#fail(error, lsn)
        throw error
      },
    )
  }

  /**
   * Hands `write` to `deliver` once the op recorded last (the one that made it) is durable:
   * its record committed, or a checkpoint covering it did. Writes go out in order; after a
   * failed write they wait for the checkpoint that repairs the log, and if the tab dies
   * first, peers never see what this replica lost.
   */
  publishWhenDurable(write: LocalWrite, deliver: (write: LocalWrite) => void): void {
    this.#durable.hold(this.#options.persistence.lastLsn, { write, deliver })
  }

  /** Whether the policy asks for a checkpoint now. */
  #due(): boolean {
    const { policy, now } = this.#options
    return this.#opsSinceCheckpoint > 0 && (this.#eventsSinceCheckpoint >= policy.events || now() - this.#checkpointedAt >= policy.ms)
  }

  #scheduleCheckpoint(): void {
    // An armed retry takes the checkpoint when its backoff is over, not every record before that.
    if (this.#checkpointDue || this.#checkpointing !== null || this.#retryTimer !== null) return
    this.#checkpointDue = true
    // After the caller's synchronous work: the engine records an op before it finished applying it.
    queueMicrotask(() => {
      this.#checkpointDue = false
      if (!this.#closed) void this.checkpoint()
    })
  }

  stats(): { readonly walRecords: number; readonly walBytes: number } {
    const { walRecords, walBytes } = this.#options.persistence.stats()
    return { walRecords, walBytes }
  }

  /**
   * Writes the engine's current state as a checkpoint covering every record so far.
   * Resolves true once it committed (and unblocks the journal), false when it failed.
   */
  checkpoint(): Promise<boolean> {
    if (this.#checkpointing !== null) return this.#checkpointing
    if (this.#fenced) return Promise.resolve(false)
    const { persistence, snapshot, now } = this.#options
    const upToLsn = persistence.lastLsn
    let taken: ReturnType<WalWriterOptions['snapshot']>
    try {
      taken = snapshot()
    } catch (error) {
      // The log still holds everything; recovery only takes longer. Not a reason to refuse input,
      // nor to encode the whole state again for every record before the backoff is over.
      this.#lastError = `checkpoint could not be encoded: ${messageOf(error)}`
      this.#changed()
      this.#scheduleRetry()
      return Promise.resolve(false)
    }
    const events = this.#eventsSinceCheckpoint
    const ops = this.#opsSinceCheckpoint
    this.#eventsSinceCheckpoint = 0
    this.#opsSinceCheckpoint = 0
    this.#checkpointedAt = now()
    const { state, lateLane } = taken
    let written: Promise<void>
    try {
      written = persistence.checkpoint(lateLane === undefined ? { upToLsn, state } : { upToLsn, state, lateLane })
    } catch (error) {
      written = Promise.reject(error)
    }
    const attempt = written.then(
      () => {
        this.#checkpointing = null
        // Ops recorded while this one was being written may already call for the next.
        if (this.#due()) this.#scheduleCheckpoint()
        if (this.#blocked === null || (!this.#fenced && upToLsn >= this.#holeAt)) {
          this.#blocked = null
          this.#holeAt = 0
          this.#retryDelay = this.#options.retry.firstMs
        } else {
          // A write failed after this state was taken: the hole is still uncovered.
          this.#scheduleRetry()
        }
        // Last: delivering writes to peers may run their code, which must find the journal settled.
        this.#durable.checkpointed(upToLsn)
        // The log was truncated behind it (and may be unblocked).
        this.#changed()
        return true
      },
      (error: unknown) => {
        this.#checkpointing = null
        this.#eventsSinceCheckpoint += events
        this.#opsSinceCheckpoint += ops
        this.#fail(error, null)
        return false
      },
    )
    this.#checkpointing = attempt
    return attempt
  }

  /** Stops retrying, takes a last checkpoint when one is due, and closes the persistence. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    if (this.#retryTimer !== null) this.#options.timers.clearTimeout(this.#retryTimer.handle)
    this.#retryTimer = null
    if (this.#checkpointing !== null) await this.#checkpointing
    if (this.#options.checkpointOnClose && this.#opsSinceCheckpoint > 0) await this.checkpoint()
    await this.#options.persistence.close()
  }

  /** `lsn`: the record that failed, or null for a checkpoint (no hole: the log still holds every record). */
  #fail(error: unknown, lsn: number | null): void {
    this.#lastError = messageOf(error)
    if (this.#closed) return
    if (isFencedError(error)) {
      // For good: ingest says why it is refused, and a retry armed for an earlier failure goes.
      this.#fenced = true
      this.#blocked = error
      if (this.#retryTimer !== null) this.#options.timers.clearTimeout(this.#retryTimer.handle)
      this.#retryTimer = null
    } else {
      if (lsn !== null) {
        this.#blocked ??= error instanceof Error ? error : new Error(String(error))
        if (lsn > this.#holeAt) this.#holeAt = lsn
      }
      this.#scheduleRetry()
    }
    // Last, the journal settled: views of the stats read the error.
    this.#changed()
  }

  #scheduleRetry(): void {
    // A checkpoint under way reschedules when it settles, if it did not unblock.
    if (this.#closed || this.#fenced || this.#retryTimer !== null || this.#checkpointing !== null) return
    const delay = this.#retryDelay
    this.#retryDelay = Math.min(2 * delay, this.#options.retry.maxMs)
    const timer: { handle: unknown } = { handle: undefined }
    this.#retryTimer = timer
    timer.handle = this.#options.timers.setTimeout(() => {
      // A timer cleared by close() that runs anyway finds another (or none) armed.
      if (this.#retryTimer !== timer) return
      this.#retryTimer = null
      if (!this.#closed) void this.checkpoint()
    }, delay)
  }
}

/**
 * What one logged operation counts toward `checkpointEvery.events`: an ingest its events, a
 * merge the cells and clocks it merged; the others count as operations only.
 *
 * @example
 * checkpointEvents({ kind: 'ingest', now: 0, events: [reading], rejected: {} }) // 1
 * checkpointEvents({ kind: 'advance', to: 60_000 }) // 0
 */
export function checkpointEvents(op: WalOp): number {
  if (op.kind === 'ingest') return op.events.length
  if (op.kind === 'merge') return cellCount(op.groups) + op.clocks.length
  return 0
}

