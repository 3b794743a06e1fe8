import type { WindowChange, WindowChangeType, WindowResult } from '@tidemark/engine'
import { AddressMap, type WindowAddress } from '../common/addressMap.ts'

/** What a tick did to one window: its last change, and the results it fired (for watched histories). */
export interface TouchedWindow {
  readonly address: WindowAddress
  type: WindowChangeType
  result: WindowResult
  /** On-time results and corrections emitted in the tick, oldest first: what the engine added to the window's history. */
  readonly fired: WindowResult[]
}

/**
 * Gathers the engine's changes between two ticks into one entry per window: its last change
 * type and value, and the results it fired. A change that moved a session to another start
 * retracts the old address, unless a later change brought it back. What a page is sent is then
 * bounded by the windows that changed, however many batches changed them.
 */
export class ChangeCompactor {
  #touched = new AddressMap<TouchedWindow>()
  #order: TouchedWindow[] = []

  get size(): number {
    return this.#order.length
  }

  add(changes: readonly WindowChange[]): void {
    for (const { type, result, previous } of changes) {
      if (previous !== undefined && (previous.window !== result.window || previous.key !== result.key || previous.start !== result.start)) {
        this.#touch(previous, 'retract', previous)
      }
      const entry = this.#touch(result, type, result)
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

  #touch(address: WindowAddress, type: WindowChangeType, result: WindowResult): TouchedWindow {
    let entry = this.#touched.get(address)
    if (entry === undefined) {
      entry = { address: { window: address.window, key: address.key, start: address.start }, type, result, fired: [] }
      this.#touched.set(address, entry)
      this.#order.push(entry)
    } else {
      entry.type = type
      entry.result = result
    }
    return entry
  }
}
