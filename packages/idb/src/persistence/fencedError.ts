/**
 * Options of `FencedError`, besides the standard `cause`.
 *
 * @example
 * const options: FencedErrorOptions = { anotherWriter: 'lsn 9 is already in the log' }
 */
export interface FencedErrorOptions extends ErrorOptions {
  /**
   * What showed another handle writing the same database (an lsn already in the log, a
   * checkpoint this handle did not write): the handle was fenced by finding that writer, not by
   * the writer epoch.
   */
  readonly anotherWriter?: string
}

/**
 * A log write was refused because another writer owns the log now, and nothing of the write is
 * in the log. Either a writer claimed the log after this handle did (`claimLog` raised the log's
 * writer epoch past this handle's), or this handle found another handle writing the same
 * database (two tabs of a claim made `withoutLocks: 'single-tab'`, or persistences given no
 * claim): its record or its checkpoint where this handle's own would go. Either way the handle
 * stays fenced, for every later write and `open()`: writing on would overwrite or truncate
 * records the other writer acknowledged.
 *
 * @example
 * try {
 *   await engine.ingest(batch).durable
 * } catch (error) {
 *   if (isFencedError(error)) stepDown() // another tab writes this log now
 * }
 */
export class FencedError extends Error {
  override readonly name = 'FencedError'
  /** The writer epoch this handle writes under; undefined for a handle without a `claimLog` claim. */
  readonly epoch: number | undefined
  /** The epoch the log holds now (a later writer's), or undefined when it holds none or another handle's writes fenced this one. */
  readonly current: number | undefined
  /**
   * What fenced the handle: `'epoch'`, a later `claimLog` raised the writer epoch;
   * `'another-writer'`, another handle's record or checkpoint was found in the log.
   */
  readonly fencedBy: 'epoch' | 'another-writer'

  /**
   * @example
   * new FencedError('indexedDbPersistence("fleet")', 3, 4, 'record lsn 9 was not written').message
   * // 'indexedDbPersistence("fleet"): another writer claimed this log (writer epoch 4, this handle has 3); record lsn 9 was not written'
   * new FencedError('indexedDbPersistence("tidemark-dash-x1")', undefined, undefined, 'record lsn 9 was not written', { anotherWriter: 'lsn 9 is already in the log' }).message
   * // 'indexedDbPersistence("tidemark-dash-x1"): another handle writes to this database (lsn 9 is already in the log), so this handle writes no more; record lsn 9 was not written'
   */
  constructor(where: string, epoch: number | undefined, current: unknown, what: string, options: FencedErrorOptions = {}) {
    const { anotherWriter, ...errorOptions } = options
    super(
      anotherWriter === undefined
        ? `${where}: another writer claimed this log (writer epoch ${String(current)}, this handle has ${String(epoch)}); ${what}`
        : `${where}: another handle writes to this database (${anotherWriter}), so this handle writes no more; ${what}`,
      errorOptions,
    )
    this.epoch = epoch
    this.current = typeof current === 'number' ? current : undefined
    this.fencedBy = anotherWriter === undefined ? 'epoch' : 'another-writer'
  }
}

/**
 * Narrows an error (a rejected `durable`, `append` or `checkpoint`) to `FencedError`.
 *
 * @example
 * receipt.durable.catch((error) => { if (isFencedError(error)) console.warn('this writer was replaced') })
 */
export function isFencedError(error: unknown): error is FencedError {
  return error instanceof FencedError || (error instanceof Error && error.name === 'FencedError')
}
