import type { WindowChange, WindowResult } from '@tidemark/engine'
import { compareResults } from './referenceModel.ts'

/** Identity of a window result: spec, key, start. */
export function resultId(result: Pick<WindowResult, 'window' | 'key' | 'start'>): string {
  return JSON.stringify([result.window, result.key, result.start])
}

/**
 * What an accumulating-and-retracting consumer holds after applying every change
 * in order. Each change is checked against what the consumer already holds, so a
 * correction whose `previous` is not the value on screen, or a retraction of
 * something never shown, fails at the change that caused it.
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
