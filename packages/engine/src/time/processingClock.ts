import { describeValue } from '../options/knownOptions.ts'

/**
 * The `now` option as the engine and the ordered stream read it (default `Date.now`): a
 * TypeError at once when it is not a function, and from each reading that is not a number,
 * thrown by the operation that read it before that operation changes anything. A `Date`, a
 * string (`now: Date`) or `undefined` would turn off `maxFutureSkew`, idle timeouts and
 * processing-time triggers without a word, and a bigint would throw from arithmetic halfway
 * through. `NaN` and the infinities are numbers: each reader tolerates them (docs/bad-input.md, B17).
 *
 * @example
 * const now = processingClock(options.now)
 * now() // ms; with `now: Date`, a TypeError ("... got one returning the string 'Tue Jun ...'")
 */
export function processingClock(given: unknown): () => number {
  const clock = given ?? Date.now
  if (typeof clock !== 'function') throw new TypeError(`now must be a function returning processing time in ms, got ${describeValue(clock)}`)
  return (): number => {
    const t: unknown = clock()
    if (typeof t !== 'number') throw new TypeError(`now must be a function returning processing time in ms, got one returning ${describeValue(t)}`)
    return t
  }
}
