/**
 * A log write was refused because another writer claimed the log after this handle did
 * (`claimLog` raised the log's writer epoch past this handle's): nothing of the write is in
 * the log. The handle stays fenced; the writer that claimed the log later owns it now.
 *
 * @example
 * try {
 *   await engine.ingest(batch).durable
 * } catch (error) {
 *   if (isFencedError(error)) stepDown() // another tab's worker writes this log now
 * }
 */
export class FencedError extends Error {
  override readonly name = 'FencedError'
  /** The writer epoch this handle writes under. */
  readonly epoch: number
  /** The epoch the log holds now (a later writer's), or undefined when it holds none. */
  readonly current: number | undefined

  /**
   * @example
   * new FencedError('indexedDbPersistence("fleet")', 3, 4, 'record lsn 9 was not written').message
   * // 'indexedDbPersistence("fleet"): another writer claimed this log (writer epoch 4, this handle has 3); record lsn 9 was not written'
   */
  constructor(where: string, epoch: number, current: unknown, what: string) {
    super(`${where}: another writer claimed this log (writer epoch ${String(current)}, this handle has ${epoch}); ${what}`)
    this.epoch = epoch
    this.current = typeof current === 'number' ? current : undefined
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
