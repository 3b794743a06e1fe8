/**
 * Storage is full: the batch was not written and nothing of it is durable.
 * The engine surfaces it from `ingest(...).durable`; the caller should slow down,
 * free space (checkpoint, drop old archives) or ask for persistent storage.
 *
 * @example
 * new QuotaError('tidemark: storage quota exceeded').name // 'QuotaError'
 */
export class QuotaError extends Error {
  override readonly name = 'QuotaError'
}

/**
 * Narrows a rejection of `ingest(...).durable` (or of `Persistence.append`/`checkpoint`)
 * to a full quota; also across realms and ports (a `@tidemark/worker` page's receipt), by name.
 *
 * @example
 * try {
 *   await engine.ingest(batch).durable
 * } catch (error) {
 *   if (isQuotaError(error)) pauseProducers()
 *   else throw error
 * }
 */
export function isQuotaError(error: unknown): error is QuotaError {
  return error instanceof QuotaError || (error instanceof Error && error.name === 'QuotaError')
}

/** Whether a storage error means "quota exceeded", across browser spellings. */
export function isQuotaExceeded(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { name, code } = error as { name?: unknown; code?: unknown }
  // 22 is the legacy DOMException code; Firefox once used its own name.
  return name === 'QuotaExceededError' || name === 'NS_ERROR_DOM_QUOTA_REACHED' || code === 22
}
