import type { ResultQuery, WindowChange, WindowChangeType, WindowResult } from '@tidemark/engine'
import type { MirroredOptions } from '../protocol/messages.ts'
import { forEachRow, type WindowRows } from '../protocol/windowRows.ts'
import { AddressMap, type WindowAddress } from '../common/addressMap.ts'
import { ExpiryQueue } from './expiryQueue.ts'

/** The live windows of one key of one spec, in ascending start order (one array: no map per key). */
class KeyWindows {
  readonly results: WindowResult[] = []

  get(start: number): WindowResult | undefined {
    const results = this.results
    const at = lowerBoundBy(results, start)
    const found = results[at]
    return found !== undefined && found.start === start ? found : undefined
  }

  set(result: WindowResult): WindowResult | undefined {
    const results = this.results
    // Windows open mostly in time order: appending is the common case.
    const last = results[results.length - 1]
    if (last === undefined || last.start < result.start) {
      results.push(result)
      return undefined
    }
    const at = lowerBoundBy(results, result.start)
    const found = results[at]
    if (found !== undefined && found.start === result.start) {
      results[at] = result
      return found
    }
    results.splice(at, 0, result)
    return undefined
  }

  delete(start: number): WindowResult | undefined {
    const at = lowerBoundBy(this.results, start)
    const found = this.results[at]
    if (found === undefined || found.start !== start) return undefined
    this.results.splice(at, 1)
    return found
  }
}

/** The first index whose result starts at or after `start`. */
function lowerBoundBy(sorted: readonly WindowResult[], start: number): number {
  let lo = 0
  let hi = sorted.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if ((sorted[mid] as WindowResult).start < start) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** The change type a snapshot row stands for, given what the mirror held before. */
function snapshotType(previous: WindowResult | undefined, next: WindowResult): WindowChangeType {
  if (previous !== undefined && !previous.final && next.final && previous.revision === next.revision && previous.status === next.status) return 'final'
  return next.status === 'provisional' ? 'provisional' : next.status === 'on_time' ? 'on_time' : 'correction'
}

/** Two results show the same thing. */
function sameResult(a: WindowResult, b: WindowResult): boolean {
  return (
    a.end === b.end &&
    a.revision === b.revision &&
    a.status === b.status &&
    a.final === b.final &&
    a.basis === b.basis &&
    Object.is(a.count, b.count) &&
    Object.is(a.sum, b.sum) &&
    Object.is(a.min, b.min) &&
    Object.is(a.max, b.max) &&
    Object.is(a.mean, b.mean)
  )
}

/**
 * The page's copy of the host engine's live windows, kept in step by frames, so `results()`
 * answers synchronously with the engine's order (spec id, key, start) and the same windows:
 * changed windows arrive as rows; final windows leave at the watermark the engine drops them
 * at; the history of a window is kept once the page asked for it.
 */
export class WindowMirror {
  readonly #specs = new Map<string, Map<string, KeyWindows>>()
  #sortedSpecs: string[] | null = null
  readonly #sortedKeys = new Map<string, string[]>()
  readonly #histories = new AddressMap<WindowResult[]>()
  readonly #expiry = new ExpiryQueue()
  #options: MirroredOptions = { allowedLateness: 0, retention: 60_000 }
  #size = 0
  /** Keys of all specs together, for the bound of `#names`. */
  #keys = 0
  /** One copy of each window id and key: a frame's strings are fresh copies, and 10,000 results would hold 20,000 of them. */
  #names = new Map<string, string>()

  #intern = (text: string): string => {
    const kept = this.#names.get(text)
    if (kept !== undefined) return kept
    // Bounded by the live keys: names of keys that left are dropped with the rest now and then.
    if (this.#names.size > 2 * (this.#keys + this.#specs.size) + 256) this.#names = new Map()
    this.#names.set(text, text)
    return text
  }

  /** Live windows held. */
  get size(): number {
    return this.#size
  }

  set options(options: MirroredOptions) {
    this.#options = options
  }

  get(address: WindowAddress): WindowResult | undefined {
    return this.#specs.get(address.window)?.get(address.key)?.get(address.start)
  }

  /**
   * Applies a frame's rows; pushes one `WindowChange` per change row to `changes`. Returns the
   * watched windows whose whole history arrived.
   */
  apply(rows: WindowRows, changes: WindowChange[]): WindowAddress[] {
    const resets: WindowAddress[] = []
    forEachRow(rows, (kind, result) => {
      if (kind === 'history-reset') {
        if (!this.#histories.has(result)) return
        this.#histories.set(result, [])
        resets.push({ window: result.window, key: result.key, start: result.start })
        return
      }
      if (kind === 'history') {
        this.#histories.get(result)?.push(result)
        return
      }
      if (kind === 'retract') {
        this.#delete(result)
        // A session withdrawn under this identity has no history of its own any more.
        if (this.#histories.has(result)) this.#histories.set(result, [])
        changes.push({ type: 'retract', result })
        return
      }
      const previous = this.#set(result)
      changes.push(kind === 'correction' && previous !== undefined ? { type: kind, result, previous } : { type: kind, result })
    }, this.#intern)
    return resets
  }

  /**
   * Replaces everything with a host's snapshot rows (a first welcome, or a new host after a
   * takeover) and pushes the changes that turn the old content into the new: a retraction for
   * each window the snapshot lacks, a change for each that differs.
   */
  replace(rows: WindowRows, changes: WindowChange[]): WindowAddress[] {
    const next = new AddressMap<WindowResult>()
    forEachRow(
      rows,
      (kind, result) => {
        if (kind !== 'history' && kind !== 'history-reset' && kind !== 'retract') next.set(result, result)
      },
      this.#intern,
    )
    const gone: WindowResult[] = []
    for (const [, byKey] of this.#specs) for (const [, windows] of byKey) for (const result of windows.results) if (!next.has(result)) gone.push(result)
    for (const result of gone) {
      this.#delete(result)
      changes.push({ type: 'retract', result })
    }
    next.forEach((result) => {
      const previous = this.get(result)
      if (previous !== undefined && sameResult(previous, result)) return
      this.#set(result)
      const type = snapshotType(previous, result)
      changes.push(type === 'correction' && previous !== undefined ? { type, result, previous } : { type, result })
    })
    return []
  }

  /** Drops the final windows the watermark has moved past `end + allowedLateness + retention`; returns those whose history was watched. */
  expire(watermark: number): WindowAddress[] {
    const unwatched: WindowAddress[] = []
    const { allowedLateness, retention } = this.#options
    for (const due of this.#expiry.due(watermark)) {
      const result = this.get(due)
      if (result === undefined || !result.final || result.end + allowedLateness + retention > watermark) continue
      this.#delete(result)
      if (this.#histories.delete(result)) unwatched.push(due)
    }
    return unwatched
  }

  /** The live windows matching `query`, in the engine's order. */
  results(query: ResultQuery = {}): WindowResult[] {
    const out: WindowResult[] = []
    const { window, key, from, to } = query
    for (const spec of this.#specIds()) {
      if (window !== undefined && spec !== window) continue
      const byKey = this.#specs.get(spec) as Map<string, KeyWindows>
      const keys = key === undefined ? this.#keysOf(spec, byKey) : byKey.has(key) ? [key] : []
      for (const k of keys) {
        const results = (byKey.get(k) as KeyWindows).results
        for (let i = from === undefined ? 0 : lowerBoundBy(results, from); i < results.length; i++) {
          const result = results[i] as WindowResult
          if (to !== undefined && result.start >= to) break
          out.push(result)
        }
      }
    }
    return out
  }

  /** The mirrored history of a watched window; undefined when it is not watched. */
  history(address: WindowAddress): readonly WindowResult[] | undefined {
    return this.#histories.get(address)
  }

  /** Starts keeping the history of `address` (empty until the host's first rows for it). */
  watch(address: WindowAddress): void {
    if (!this.#histories.has(address)) this.#histories.set(address, [])
  }

  /** Every watched address (to ask a new host for them again). */
  watched(): WindowAddress[] {
    const out: WindowAddress[] = []
    this.#histories.forEach((_, address) => {
      out.push(address)
    })
    return out
  }

  #set(result: WindowResult): WindowResult | undefined {
    let byKey = this.#specs.get(result.window)
    if (byKey === undefined) {
      byKey = new Map()
      this.#specs.set(result.window, byKey)
      this.#sortedSpecs = null
    }
    let windows = byKey.get(result.key)
    if (windows === undefined) {
      windows = new KeyWindows()
      byKey.set(result.key, windows)
      this.#keys++
      this.#sortedKeys.delete(result.window)
    }
    const previous = windows.set(result)
    if (previous === undefined) this.#size++
    if (result.final && previous?.final !== true) {
      const { allowedLateness, retention } = this.#options
      this.#expiry.push({ at: result.end + allowedLateness + retention, window: result.window, key: result.key, start: result.start })
    }
    return previous
  }

  #delete(address: WindowAddress): void {
    const byKey = this.#specs.get(address.window)
    const windows = byKey?.get(address.key)
    if (byKey === undefined || windows === undefined || windows.delete(address.start) === undefined) return
    this.#size--
    if (windows.results.length > 0) return
    byKey.delete(address.key)
    this.#keys--
    this.#sortedKeys.delete(address.window)
    if (byKey.size > 0) return
    this.#specs.delete(address.window)
    this.#sortedSpecs = null
  }

  #specIds(): string[] {
    this.#sortedSpecs ??= [...this.#specs.keys()].sort()
    return this.#sortedSpecs
  }

  #keysOf(spec: string, byKey: Map<string, KeyWindows>): string[] {
    let keys = this.#sortedKeys.get(spec)
    if (keys === undefined) {
      keys = [...byKey.keys()].sort()
      this.#sortedKeys.set(spec, keys)
    }
    return keys
  }
}
