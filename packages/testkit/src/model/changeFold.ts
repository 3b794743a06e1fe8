import type { WindowChange, WindowResult } from '@tidemark/engine'
import { compareResults, resultId } from './resultIdentity.ts'

/**
 * What an accumulating-and-retracting consumer holds after applying every change
 * in order. Each change is checked against what the consumer already holds, so a
 * correction whose `previous` is not the value on screen, or a retraction of
 * something never shown, fails at the change that caused it.
 *
 * @example
 * const fold = new ChangeFold()
 * engine.subscribe((changes) => fold.apply(changes))
 * // ... ingest, tick ...
 * expect(fold.results()).toEqual(engine.results()) // what a consumer shows is what the engine holds
 */
export class ChangeFold {
  readonly #shown = new Map<string, WindowResult>()

  apply(changes: readonly WindowChange[]): void {
    for (const change of changes) this.#applyOne(change)
  }

  #applyOne(change: WindowChange): void {
    const id = resultId(change.result)
    const shown = this.#shown.get(id)
    const fail = (why: string) => {
      throw new Error(`${why}: ${JSON.stringify(change)} while showing ${JSON.stringify(shown ?? null)}`)
    }
    if (change.pane !== change.result.pane) fail('change.pane is not its result’s pane')
    switch (change.type) {
      case 'provisional':
      case 'on_time':
        if (shown !== undefined && shown.status !== 'provisional') fail(`${change.type} over a fired result`)
        break
      case 'correction':
        if (change.previous === undefined) {
          if (shown !== undefined) fail('correction without previous over a shown result')
        } else if (JSON.stringify(change.previous) !== JSON.stringify(shown ?? null)) {
          fail('correction whose previous is not the shown result')
        }
        break
      case 'final':
        if (shown === undefined) fail('final for a result never shown')
        if (!change.result.final) fail('final change with final: false')
        break
      case 'retract':
        if (JSON.stringify(change.result) !== JSON.stringify(shown ?? null)) fail('retract of a result not shown')
        this.#shown.delete(id)
        return
    }
    this.#shown.set(id, change.result)
  }

  /** Shown results, ordered like `engine.results()`, keeping those for which `keep` holds. */
  results(keep: (result: WindowResult) => boolean = () => true): WindowResult[] {
    return [...this.#shown.values()].filter(keep).sort(compareResults)
  }
}

/** A window's value as a discarding consumer adds it up. */
export interface FoldedValue {
  readonly count: number
  readonly sum: number
  readonly min: number
  readonly max: number
}

/**
 * What a consumer of discarding panes holds: per window, its panes merged (counts and sums
 * added, min and max taken, an empty pane's placeholder 0s ignored). A pane with `previous`
 * carries the whole window again and replaces the total; `final` repeats the last pane and adds
 * nothing; `retract` drops the window. Each change is checked as it comes: a `previous` must be
 * the last pane of its window, a retraction must name it.
 *
 * @example
 * const fold = new DiscardingFold()
 * engine.subscribe((changes) => fold.apply(changes))
 * // ... ingest, tick ...
 * // the discarding panes add up to what an accumulating engine shows:
 * expect(fold.totals()).toEqual(wholeValues(accumulatingEngine.results()))
 */
export class DiscardingFold {
  readonly #totals = new Map<string, { value: FoldedValue; last: WindowResult }>()

  /** Folds `changes` in, checking each; throws naming the change that breaks the rules. */
  apply(changes: readonly WindowChange[]): void {
    for (const change of changes) this.#applyOne(change)
  }

  #applyOne(change: WindowChange): void {
    const id = resultId(change.result)
    const held = this.#totals.get(id)
    const fail = (why: string) => {
      throw new Error(`${why}: ${JSON.stringify(change)} while holding ${JSON.stringify(held ?? null)}`)
    }
    if (change.pane !== change.result.pane) fail('change.pane is not its result’s pane')
    const r = change.result
    switch (change.type) {
      case 'retract':
        if (held === undefined || JSON.stringify(held.last) !== JSON.stringify(r)) fail('retract of a window whose last pane is another')
        this.#totals.delete(id)
        return
      case 'final':
        if (held === undefined) fail('final for a window never shown')
        else this.#totals.set(id, { value: held.value, last: r })
        return
    }
    if (change.previous !== undefined) {
      if (held === undefined || JSON.stringify(held.last) !== JSON.stringify(change.previous)) fail('a whole-window pane whose previous is not the last pane')
      this.#totals.set(id, { value: foldedOf(r), last: r })
      return
    }
    const before = held?.value ?? { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY }
    const value =
      r.count === 0
        ? before
        : { count: before.count + r.count, sum: before.sum + r.sum, min: Math.min(before.min, r.min), max: Math.max(before.max, r.max) }
    this.#totals.set(id, { value, last: r })
  }

  /** The last pane (or final change) of each window held, by identity. */
  lasts(): Map<string, WindowResult> {
    return new Map([...this.#totals].map(([id, { last }]) => [id, last]))
  }

  /** The total per window identity, for the windows whose last pane passes `keep`. */
  totals(keep: (last: WindowResult) => boolean = () => true): Map<string, FoldedValue> {
    const out = new Map<string, FoldedValue>()
    for (const [id, { value, last }] of this.#totals) if (keep(last)) out.set(id, value)
    return out
  }
}

function foldedOf(r: WindowResult): FoldedValue {
  return r.count === 0 ? { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY } : { count: r.count, sum: r.sum, min: r.min, max: r.max }
}

/**
 * The values an accumulating engine shows, keyed like `DiscardingFold.totals`: what the
 * discarding panes of the same input must add up to.
 *
 * @example
 * expect(discarding.totals()).toEqual(wholeValues(accumulatingEngine.results()))
 */
export function wholeValues(results: readonly WindowResult[]): Map<string, FoldedValue> {
  return new Map(results.map((r) => [resultId(r), foldedOf(r)]))
}
