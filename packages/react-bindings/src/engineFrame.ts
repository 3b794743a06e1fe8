import type { ResultQuery, WindowChange, WindowResult } from '@tidemark/engine'

/**
 * The window changes the engine announced between two frames, oldest first.
 * Observers ask it whether their slice was touched before they read the
 * engine, so a frame costs a reader nothing when its windows did not change.
 */
export class EngineFrame {
  readonly changes: readonly WindowChange[]
  /**
   * Each touched window's value after the frame, `null` when it was retracted
   * or moved away. Built on the first lookup, once per frame, however many
   * observers ask.
   */
  #latest: Map<string, WindowResult | null> | null = null

  constructor(changes: readonly WindowChange[]) {
    this.changes = changes
  }

  /**
   * The value window `(window, key, start)` has after this frame: `undefined`
   * when no change touched it, `null` when it was retracted (a session that
   * merged into another, or that now starts elsewhere).
   */
  latest(window: string, key: string, start: number): WindowResult | null | undefined {
    this.#latest ??= latestByWindow(this.changes)
    return this.#latest.get(windowId(window, key, start))
  }

  /** Whether any change in this frame is about window `(window, key, start)`. */
  touches(window: string, key: string, start: number): boolean {
    return this.latest(window, key, start) !== undefined
  }

  /** Whether any change in this frame falls inside `query` (as `engine.results(query)` filters). */
  matches(query: ResultQuery | undefined): boolean {
    if (query === undefined) return this.changes.length > 0
    for (const change of this.changes) {
      if (inQuery(change.result, query)) return true
      if (change.previous !== undefined && inQuery(change.previous, query)) return true
    }
    return false
  }
}

function latestByWindow(changes: readonly WindowChange[]): Map<string, WindowResult | null> {
  const latest = new Map<string, WindowResult | null>()
  for (const { type, result, previous } of changes) {
    const id = windowId(result.window, result.key, result.start)
    if (previous !== undefined) {
      const previousId = windowId(previous.window, previous.key, previous.start)
      if (previousId !== id) latest.set(previousId, null)
    }
    latest.set(id, type === 'retract' ? null : result)
  }
  return latest
}

interface WindowPosition {
  readonly window: string
  readonly key: string
  readonly start: number
}

function inQuery(result: WindowPosition, query: ResultQuery): boolean {
  return (
    (query.window === undefined || result.window === query.window) &&
    (query.key === undefined || result.key === query.key) &&
    (query.from === undefined || result.start >= query.from) &&
    (query.to === undefined || result.start < query.to)
  )
}

/** Spec ids hold no NUL and `start` is a number, so the id stays unambiguous whatever a key holds. */
function windowId(window: string, key: string, start: number): string {
  return `${window}\u0000${key}\u0000${start}`
}
