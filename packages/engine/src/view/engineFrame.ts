import type { ResultQuery, WindowChange, WindowResult } from '../windows/windowResult.ts'
import { lookup, place, sameWindow, type WindowAddress, type WindowAddressMap } from './windowAddresses.ts'

/** What a `KnownLatest` answers for a window it knows no change in this frame touched. */
export const UNTOUCHED = Symbol('untouched')

/**
 * The latest values the feed already worked out while dispatching the frame
 * (for every watched window); `undefined` for a window it does not know.
 */
export type KnownLatest = (address: WindowAddress) => WindowResult | null | typeof UNTOUCHED | undefined

/**
 * The window changes the engine announced between two frames, oldest first.
 * Observers ask it whether their slice was touched before they read the
 * engine, so a frame costs a reader nothing when its windows did not change.
 */
export class EngineFrame {
  readonly changes: readonly WindowChange[]
  /**
   * Each touched window's value after the frame, `null` when it was retracted
   * or moved away. Built on the first lookup of a window the feed did not
   * already know, once per frame, however many observers ask.
   */
  #latest: WindowAddressMap<WindowResult | null> | null = null

  #known: KnownLatest | undefined

  /** The windows each key's changes touch (results and what they replaced), built on the first query by key. */
  #byKey: Map<string, WindowAddress[]> | null = null

  /** Changes of windows that left live state were left out: every query is told it matches. */
  readonly #dropped: boolean

  /** `dropped`: changes of windows that left live state were left out (a hidden tab's backlog). */
  constructor(changes: readonly WindowChange[], known?: KnownLatest, dropped = false) {
    this.changes = changes
    this.#known = known
    this.#dropped = dropped
  }

  /**
   * The value window `(window, key, start)` has after this frame (`end` tells the windows of a
   * cumulating spec apart): `undefined` when no change touched it, `null` when it was retracted
   * (a session that merged into another, or that now starts elsewhere).
   */
  latest(window: string, key: string, start: number, end?: number): WindowResult | null | undefined {
    const address = end === undefined ? { window, key, start } : { window, key, start, end }
    const known = this.#known?.(address)
    if (known !== undefined) return known === UNTOUCHED ? undefined : known
    this.#latest ??= latestByWindow(this.changes)
    return lookup(this.#latest, address)
  }

  /** Whether any change in this frame is about window `(window, key, start)` (ending at `end`). */
  touches(window: string, key: string, start: number, end?: number): boolean {
    return this.latest(window, key, start, end) !== undefined
  }

  /** Whether any change in this frame falls inside `query` (as `engine.results(query)` filters). */
  matches(query: ResultQuery | undefined): boolean {
    if (this.#dropped) return true
    if (query === undefined) return this.changes.length > 0
    if (query.key !== undefined) {
      // A dashboard asks once per view and frame: one pass over the frame serves every key.
      this.#byKey ??= addressesByKey(this.changes)
      const touched = this.#byKey.get(query.key)
      if (touched === undefined) return false
      for (const address of touched) if (inQuery(address, query)) return true
      return false
    }
    for (const change of this.changes) {
      if (inQuery(change.result, query)) return true
      if (change.previous !== undefined && inQuery(change.previous, query)) return true
    }
    return false
  }
}

function addressesByKey(changes: readonly WindowChange[]): Map<string, WindowAddress[]> {
  const byKey = new Map<string, WindowAddress[]>()
  const add = (address: WindowAddress): void => {
    const touched = byKey.get(address.key)
    if (touched === undefined) byKey.set(address.key, [address])
    else touched.push(address)
  }
  for (const { result, previous } of changes) {
    add(result)
    if (previous !== undefined) add(previous)
  }
  return byKey
}

function latestByWindow(changes: readonly WindowChange[]): WindowAddressMap<WindowResult | null> {
  const latest: WindowAddressMap<WindowResult | null> = new Map()
  for (const { type, result, previous } of changes) {
    if (previous !== undefined && !sameWindow(previous, result)) place(latest, previous, null)
    place(latest, result, type === 'retract' ? null : result)
  }
  return latest
}

/**
 * The same frame told shorter, for when frames stop running (a hidden tab
 * runs no animation frames) while the engine keeps notifying: the last change
 * of each window, and a `retract` for each window a change moved away from,
 * unless a later change brought it back. Every answer of an `EngineFrame`
 * (`latest`, `touches`, `matches`) stays the same; `previous` values are
 * dropped, as no slice reads them. The result holds at most one change per
 * window ever touched; the feed then drops those of windows no longer live.
 */
export function compactChanges(changes: readonly WindowChange[]): WindowChange[] {
  const last: WindowAddressMap<WindowChange> = new Map()
  for (const { type, result, previous } of changes) {
    if (previous !== undefined && !sameWindow(previous, result)) {
      place(last, previous, { type: 'retract', result: previous, pane: previous.pane })
    }
    place(last, result, { type, result, pane: result.pane })
  }
  const compacted: WindowChange[] = []
  for (const byKey of last.values()) for (const byPosition of byKey.values()) for (const change of byPosition.values()) compacted.push(change)
  return compacted
}

function inQuery(result: WindowAddress, query: ResultQuery): boolean {
  return (
    (query.window === undefined || result.window === query.window) &&
    (query.key === undefined || result.key === query.key) &&
    (query.from === undefined || result.start >= query.from) &&
    (query.to === undefined || result.start < query.to)
  )
}
