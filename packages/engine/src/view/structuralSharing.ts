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

/**
 * `previous` when every field of `next` is equal to its own (by `same`), else `next` with each
 * field that is equal taken from `previous`: a selector of one field keeps its identity while
 * the field's content does, even when the record around it changed.
 */
export function shareRecord<T extends object>(previous: T, next: T, same: (a: unknown, b: unknown) => boolean): T {
  const shared = { ...next } as Record<string, unknown>
  let kept = 0
  const keys = Object.keys(next)
  for (const key of keys) {
    const old = (previous as Record<string, unknown>)[key]
    if (Object.hasOwn(previous, key) && same(old, shared[key])) {
      shared[key] = old
      kept++
    }
  }
  return kept === keys.length && keys.length === Object.keys(previous).length ? previous : (shared as T)
}

/**
 * Two fields of a record such as the stats equal by content, down to the records in an array
 * (`futureSources`: a new object per source in every read).
 */
export function sameField(a: unknown, b: unknown): boolean {
  return shallowEqual(a, b, (x, y) => shallowEqual(x, y))
}
