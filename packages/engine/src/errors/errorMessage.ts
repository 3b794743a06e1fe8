/**
 * The message of a thrown value: an `Error`'s message, anything else as a string. For
 * reasons kept in stats and claims (`persistenceError`, `memoryError`).
 *
 * @example
 * messageOf(new RangeError('too big')) // 'too big'
 * messageOf('quota') // 'quota'
 */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
