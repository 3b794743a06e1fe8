import type { WindowResult } from '@tidemark/engine'

/**
 * The live windows of one key of one spec, in the engine's order (one array: no map per key):
 * by start, then, for a cumulating spec, whose windows share their start, by end.
 *
 * @example
 * const windows = new KeyWindows(false)
 * windows.set(result) // undefined: new; else the result it replaced
 * windows.get(result.start, result.end)
 */
export class KeyWindows {
  readonly results: WindowResult[] = []
  /** The windows share their start (a cumulating spec): the end tells them apart. */
  readonly #byEnd: boolean

  constructor(byEnd: boolean) {
    this.#byEnd = byEnd
  }

  /** The window at `start` (ending at `end`, for a cumulating spec). */
  get(start: number, end: number): WindowResult | undefined {
    const results = this.results
    const found = results[this.#lowerBound(start, end)]
    return found !== undefined && this.#at(found, start, end) ? found : undefined
  }

  set(result: WindowResult): WindowResult | undefined {
    const results = this.results
    // Windows open mostly in time order: appending is the common case.
    const last = results[results.length - 1]
    if (last === undefined || this.#before(last, result.start, result.end)) {
      results.push(result)
      return undefined
    }
    const at = this.#lowerBound(result.start, result.end)
    const found = results[at]
    if (found !== undefined && this.#at(found, result.start, result.end)) {
      results[at] = result
      return found
    }
    results.splice(at, 0, result)
    return undefined
  }

  /** The first index whose window starts at or after `start`. */
  from(start: number): number {
    return this.#lowerBound(start, Number.NEGATIVE_INFINITY)
  }

  delete(start: number, end: number): WindowResult | undefined {
    const at = this.#lowerBound(start, end)
    const found = this.results[at]
    if (found === undefined || !this.#at(found, start, end)) return undefined
    this.results.splice(at, 1)
    return found
  }

  /** The first index whose window is not before `(start, end)`. */
  #lowerBound(start: number, end: number): number {
    const sorted = this.results
    let lo = 0
    let hi = sorted.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (this.#before(sorted[mid] as WindowResult, start, end)) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  #before(result: WindowResult, start: number, end: number): boolean {
    return result.start < start || (this.#byEnd && result.start === start && result.end < end)
  }

  /** Whether `result` is the window at `(start, end)`; outside cumulating specs a window's end may move (a growing session). */
  #at(result: WindowResult, start: number, end: number): boolean {
    return result.start === start && (!this.#byEnd || result.end === end)
  }
}
