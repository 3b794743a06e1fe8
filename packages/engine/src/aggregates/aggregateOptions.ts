import { assertKnownOptions } from '../options/knownOptions.ts'

/**
 * Checks an aggregate factory's options: an object (or absent when `required` is false) with no
 * unknown key, and an `of` that is a function when given. Throws a TypeError naming the factory.
 *
 * @example
 * checkAggregateOptions('histogram', { bound: [1] }, ['bounds', 'of'], true)
 * // TypeError: histogram: unknown option 'bound' (did you mean 'bounds'?)
 */
export function checkAggregateOptions(where: string, options: unknown, known: readonly string[], required: boolean): void {
  if (options === undefined && !required) return
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`${where}: expected an options object, got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`)
  }
  assertKnownOptions(where, options, known)
  const of = (options as { of?: unknown }).of
  if (of !== undefined && typeof of !== 'function') throw new TypeError(`${where}: of must be a function of the event, got ${typeof of}`)
}

/**
 * A numeric option: `fallback` when absent, otherwise a number within [min, max] (an integer
 * when `integer`). Throws a RangeError naming the option.
 *
 * @example
 * numberOption('quantiles', 'maxBuckets', undefined, 2048, 16, 65_536, true) // 2048
 */
export function numberOption(where: string, name: string, value: unknown, fallback: number, min: number, max: number, integer: boolean): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !(value >= min && value <= max) || (integer && !Number.isInteger(value))) {
    throw new RangeError(`${where}: ${name} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${String(value)}`)
  }
  return value
}

/**
 * True when `value` is an array of 1 to `max` items whose every index passes `ok`: a hole (which
 * `every` skips) is read as undefined and fails.
 *
 * @example
 * isListOf([0.5, , 0.9], 100, (q) => typeof q === 'number') // false: index 1 is a hole
 */
export function isListOf(value: unknown, max: number, ok: (item: unknown, i: number) => boolean): value is unknown[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > max) return false
  for (let i = 0; i < value.length; i++) if (!ok(value[i], i)) return false
  return true
}
