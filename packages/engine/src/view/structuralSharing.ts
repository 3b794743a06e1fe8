import type { WindowResult } from '../windows/windowResult.ts'

/**
 * Keeps what did not change by identity, so React sees a new value only when
 * something a user could see changed, and memoized children of unchanged
 * items skip rendering.
 */

/**
 * `previous` when `next` holds the same items in the same order, else a new
 * array that reuses each item of `previous` equal to the one at its position.
 * Always a copy when different: the engine may hand out an array it mutates.
 */
export function shareArray<T>(
  previous: readonly T[],
  next: readonly T[],
  same: (a: T, b: T) => boolean,
): readonly T[] {
  if (previous.length === next.length && next.every((item, i) => same(previous[i] as T, item))) {
    return previous
  }
  return next.map((item, i) => {
    const old = previous[i]
    return i < previous.length && same(old as T, item) ? (old as T) : item
  })
}

/** Two results show the same thing, whether or not the engine made a new object. */
export function sameWindowResult(a: WindowResult, b: WindowResult): boolean {
  return (
    a === b ||
    (a.window === b.window &&
      a.key === b.key &&
      a.start === b.start &&
      a.end === b.end &&
      a.revision === b.revision &&
      a.status === b.status &&
      a.final === b.final &&
      a.basis === b.basis &&
      a.pane.index === b.pane.index &&
      a.pane.onTimeIndex === b.pane.onTimeIndex &&
      a.pane.timing === b.pane.timing &&
      Object.is(a.count, b.count) &&
      Object.is(a.sum, b.sum) &&
      Object.is(a.min, b.min) &&
      Object.is(a.max, b.max) &&
      Object.is(a.mean, b.mean))
  )
}

/**
 * Equal by `Object.is`, or arrays with equal items, or plain objects with the
 * same keys and equal values; items and values compare with `sameValue`
 * (`Object.is` unless given, so one level deep).
 *
 * @example
 * shallowEqual({ a: 1, b: [2] }, { a: 1, b: [2] }) // false: the arrays are different objects
 * shallowEqual([1, 2], [1, 2]) // true
 * useEngineStats((s) => ({ lag: s.watermarkLag, late: s.lateLane }), shallowEqual) // the hooks' default comparison
 */
export function shallowEqual(
  a: unknown,
  b: unknown,
  sameValue: (a: unknown, b: unknown) => boolean = Object.is,
): boolean {
  if (Object.is(a, b)) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, i) => sameValue(item, b[i]))
    )
  }
  const aKeys = Object.keys(a)
  if (aKeys.length !== Object.keys(b).length) return false
  return aKeys.every(
    (key) =>
      Object.hasOwn(b, key) &&
      sameValue((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
  )
}

/** `shallowEqual` two levels deep: for records such as stats that nest a record. */
export function shallowEqual2(a: unknown, b: unknown): boolean {
  return shallowEqual(a, b, (x, y) => shallowEqual(x, y))
}
