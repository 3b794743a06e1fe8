import type { WindowChange, WindowChangeType, WindowResult } from '@tidemark/engine'
import { AddressMap } from '../common/addressMap.ts'
import { addressOf, sameAddress, type WindowAddress } from '../common/windowAddress.ts'

/** One change a page is sent: its window, type and result, and whether the engine's change carried `previous`. */
export interface ChangeRow {
  readonly address: WindowAddress
  readonly type: WindowChangeType
  readonly result: WindowResult
  readonly previous: boolean
}

/**
 * Gathers the engine's changes between two ticks. In accumulating mode a pane carries the whole
 * window, so a window's last change says all: one row per window, in first-touched order, and
 * what a page is sent is bounded by the windows that changed, however many batches changed
 * them. In discarding mode a pane is only what arrived since the window's last one, which a
 * consumer adds up: every change is kept, in the engine's order. A change whose `previous`
 * names another window retracts that one.
 */
export class ChangeCompactor {
  readonly #keepsPanes: boolean
  #latest = new AddressMap<ChangeRow>()
  #rows: ChangeRow[] = []

  /** `keepsPanes`: keep every change (discarding mode), not only each window's last. */
  constructor(keepsPanes: boolean) {
    this.#keepsPanes = keepsPanes
  }

  add(changes: readonly WindowChange[]): void {
    for (const { type, result, previous } of changes) {
      if (previous !== undefined && !sameAddress(previous, result)) this.#add({ address: addressOf(previous), type: 'retract', result: previous, previous: false })
      this.#add({ address: addressOf(result), type, result, previous: previous !== undefined })
    }
  }

  /** The rows since the last `take`; starts empty again. */
  take(): ChangeRow[] {
    const rows = this.#keepsPanes ? this.#rows : this.#firstTouched()
    this.#rows = []
    this.#latest = new AddressMap()
    return rows
  }

  #add(row: ChangeRow): void {
    if (this.#keepsPanes) {
      this.#rows.push(row)
      return
    }
    if (!this.#latest.has(row.address)) this.#rows.push(row)
    this.#latest.set(row.address, row)
  }

  /** Each window's last row, in the order the windows were first touched. */
  #firstTouched(): ChangeRow[] {
    return this.#rows.map((first) => this.#latest.get(first.address) as ChangeRow)
  }
}
