import type { WindowChange, WindowChangeType, WindowResult } from '@tidemark/engine'
import { AddressMap } from '../common/addressMap.ts'
import { addressOf, sameAddress, type WindowAddress } from '../common/windowAddress.ts'

/** One change a page is sent: its type, the window's result, and whether the engine's change carried `previous`. */
export interface ChangeRow {
  readonly type: WindowChangeType
  readonly result: WindowResult
  readonly previous: boolean
}

/** What a tick did to one window: its changes, and the results it fired (for watched histories). */
export interface TouchedWindow {
  readonly address: WindowAddress
  /**
   * The window's changes in the tick, oldest first: only the last one when panes carry the whole
   * window (accumulating), every one when each pane is an increment a consumer adds up (discarding).
   */
  readonly rows: ChangeRow[]
  /** On-time results and corrections emitted in the tick, oldest first: what the engine added to the window's history. */
  readonly fired: WindowResult[]
}

/**
 * Gathers the engine's changes between two ticks into one entry per window: its last change
 * (accumulating mode) or all of them (discarding mode, where a pane is only what arrived since
 * the last one), and the results it fired. A change whose `previous` names another window
 * retracts that one, unless a later change brought it back. In accumulating mode what a page is
 * sent is then bounded by the windows that changed, however many batches changed them.
 */
export class ChangeCompactor {
  readonly #keepsPanes: boolean
  #touched = new AddressMap<TouchedWindow>()
  #order: TouchedWindow[] = []

  /** `keepsPanes`: keep every change of a window (discarding mode), not only its last. */
  constructor(keepsPanes: boolean) {
    this.#keepsPanes = keepsPanes
  }

  get size(): number {
    return this.#order.length
  }

  add(changes: readonly WindowChange[]): void {
    for (const { type, result, previous } of changes) {
      if (previous !== undefined && !sameAddress(previous, result)) {
        this.#touch(previous).rows.push({ type: 'retract', result: previous, previous: false })
      }
      const entry = this.#touch(result)
      entry.rows.push({ type, result, previous: previous !== undefined })
      if (type === 'on_time' || type === 'correction') entry.fired.push(result)
    }
  }

  /** The windows touched since the last `take`, in first-touched order; starts empty again. */
  take(): TouchedWindow[] {
    const order = this.#order
    this.#touched = new AddressMap()
    this.#order = []
    return order
  }

  /** The entry of `address`, ready for one more row (emptied first unless every pane is kept). */
  #touch(address: WindowAddress): TouchedWindow {
    let entry = this.#touched.get(address)
    if (entry === undefined) {
      entry = { address: addressOf(address), rows: [], fired: [] }
      this.#touched.set(address, entry)
      this.#order.push(entry)
    } else if (!this.#keepsPanes) entry.rows.length = 0
    return entry
  }
}
