/**
 * Runs async jobs a few at a time: the machines this runs on have two cores, and the tools
 * (tsc, attw) are single-threaded, so two at a time halves the wall time without oversubscribing.
 */

/**
 * Maps `items` through `job` with at most `limit` jobs running, keeping the input order.
 * After a job fails no further job starts; the map rejects with that failure once the
 * running jobs have ended.
 *
 * @example
 * const sizes = await boundedParallel(['a', 'b', 'c'], 2, async (name) => name.length)
 */
export async function boundedParallel<T, R>(items: readonly T[], limit: number, job: (item: T) => Promise<R>): Promise<R[]> {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`boundedParallel: limit must be a positive integer, got ${limit}`)
  const results: R[] = new Array(items.length)
  const failures: unknown[] = []
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length && failures.length === 0) {
      const index = next++
      try {
        results[index] = await job(items[index] as T)
      } catch (error) {
        failures.push(error)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  if (failures.length > 0) throw failures[0]
  return results
}
