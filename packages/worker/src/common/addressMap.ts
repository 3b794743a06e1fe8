import { addressOf, positionOf, type WindowAddress } from './windowAddress.ts'

interface Entry<V> {
  readonly address: WindowAddress
  value: V
}

/** Values by window address (nested maps: no string key to build per lookup). */
export class AddressMap<V> {
  readonly #byWindow = new Map<string, Map<string, Map<number, Entry<V>>>>()
  #size = 0

  get size(): number {
    return this.#size
  }

  get(address: WindowAddress): V | undefined {
    return this.#byWindow.get(address.window)?.get(address.key)?.get(positionOf(address))?.value
  }

  has(address: WindowAddress): boolean {
    return this.#byWindow.get(address.window)?.get(address.key)?.has(positionOf(address)) ?? false
  }

  set(address: WindowAddress, value: V): void {
    let byKey = this.#byWindow.get(address.window)
    if (byKey === undefined) {
      byKey = new Map()
      this.#byWindow.set(address.window, byKey)
    }
    let byPosition = byKey.get(address.key)
    if (byPosition === undefined) {
      byPosition = new Map()
      byKey.set(address.key, byPosition)
    }
    const position = positionOf(address)
    const entry = byPosition.get(position)
    if (entry !== undefined) {
      entry.value = value
      return
    }
    byPosition.set(position, { address: addressOf(address), value })
    this.#size++
  }

  delete(address: WindowAddress): boolean {
    const byKey = this.#byWindow.get(address.window)
    const byPosition = byKey?.get(address.key)
    if (byKey === undefined || byPosition === undefined || !byPosition.delete(positionOf(address))) return false
    this.#size--
    if (byPosition.size === 0) byKey.delete(address.key)
    if (byKey.size === 0) this.#byWindow.delete(address.window)
    return true
  }

  /** Visits every entry with its address (spec, key, start, and a cumulating window's end). */
  forEach(visit: (value: V, address: WindowAddress) => void): void {
    for (const byKey of this.#byWindow.values()) {
      for (const byPosition of byKey.values()) for (const entry of byPosition.values()) visit(entry.value, entry.address)
    }
  }

  clear(): void {
    this.#byWindow.clear()
    this.#size = 0
  }
}
