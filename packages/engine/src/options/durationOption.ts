import { describeValue } from './knownOptions.ts'

/**
 * An option that is a span of ms (`idleTimeout`, `maxFutureSkew`, …), checked: `fallback` when
 * absent; a RangeError naming the option for a value that is not a number >= 0. `infinite` says
 * what Infinity means for it, or null when it must be finite (then Infinity is left to the caller
 * to refuse with its own reason).
 *
 * @example
 * durationOption('maxFutureSkew', undefined, 86_400_000, 'no event is refused for being ahead of the clock') // 86400000
 * durationOption('idleTimeout', -1, Infinity, 'sources never turn idle') // RangeError: idleTimeout must be a number >= 0 (Infinity: sources never turn idle) of ms, got -1
 */
export function durationOption(name: string, value: unknown, fallback: number, infinite: string | null): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    const range = infinite === null ? 'a finite number >= 0' : `a number >= 0 (Infinity: ${infinite})`
    throw new RangeError(`${name} must be ${range} of ms, got ${describeValue(value)}`)
  }
  return value
}
