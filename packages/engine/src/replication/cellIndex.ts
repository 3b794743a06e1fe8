/**
 * Raw doc entries of one replica's log by cell address, in nested Maps (window → key → source
 * → start). No string is built per entry: a flat key would need the start as text, and
 * turning a time like 1.7e12 into a string costs microseconds, about as much as decoding the
 * entry. Used by `ReplicaLog`.
 */
import type { CellAddress } from '../replicaPort.ts'
import type { DocEntry } from './docEntry.ts'

type ByStart = Map<number, DocEntry[]>

export class CellIndex {
  readonly #byWindow = new Map<string, Map<string, Map<string, ByStart>>>()

  /** The entries filed under `address`. */
  get(address: CellAddress): DocEntry[] | undefined {
    return this.#byWindow.get(address.window)?.get(address.key)?.get(address.source)?.get(address.start)
  }

  /** Replaces the entries of `address` (an empty list removes it). */
  set(address: CellAddress, entries: DocEntry[]): void {
    if (entries.length === 0) {
      this.delete(address)
      return
    }
    this.#starts(address).set(address.start, entries)
  }

  /** Adds one entry under `address`, once. */
  file(address: CellAddress, raw: DocEntry): void {
    const starts = this.#starts(address)
    const list = starts.get(address.start)
    if (list === undefined) starts.set(address.start, [raw])
    else if (!list.includes(raw)) list.push(raw)
  }

  /** Removes one entry (by identity) from `address`. */
  unfile(address: CellAddress, raw: DocEntry): void {
    const list = this.get(address)
    if (list === undefined || !list.includes(raw)) return
    this.set(
      address,
      list.filter((e) => e !== raw),
    )
  }

  delete(address: CellAddress): void {
    const byKey = this.#byWindow.get(address.window)
    const bySource = byKey?.get(address.key)
    const starts = bySource?.get(address.source)
    if (starts === undefined || !starts.delete(address.start)) return
    if (starts.size > 0) return
    bySource?.delete(address.source)
    if ((bySource?.size ?? 0) > 0) return
    byKey?.delete(address.key)
    if ((byKey?.size ?? 0) === 0) this.#byWindow.delete(address.window)
  }

  /** Every list of entries. */
  *lists(): IterableIterator<DocEntry[]> {
    for (const byKey of this.#byWindow.values()) for (const bySource of byKey.values()) for (const starts of bySource.values()) yield* starts.values()
  }

  clear(): void {
    this.#byWindow.clear()
  }

  #starts(address: CellAddress): ByStart {
    let byKey = this.#byWindow.get(address.window)
    if (byKey === undefined) {
      byKey = new Map()
      this.#byWindow.set(address.window, byKey)
    }
    let bySource = byKey.get(address.key)
    if (bySource === undefined) {
      bySource = new Map()
      byKey.set(address.key, bySource)
    }
    let starts = bySource.get(address.source)
    if (starts === undefined) {
      starts = new Map()
      bySource.set(address.source, starts)
    }
    return starts
  }
}
