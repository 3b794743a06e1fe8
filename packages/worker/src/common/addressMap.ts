/** A window's address: spec id, key and start. */
export interface WindowAddress {
  readonly window: string
  readonly key: string
  readonly start: number
}

/** Values by window address (nested maps: no string key to build per lookup). */
export class AddressMap<V> {
  readonly #byWindow = new Map<string, Map<string, Map<number, V>>>()
  #size = 0

  get size(): number {
    return this.#size
  }

  get(address: WindowAddress): V | undefined {
    return this.#byWindow.get(address.window)?.get(address.key)?.get(address.start)
  }

  has(address: WindowAddress): boolean {
    return this.#byWindow.get(address.window)?.get(address.key)?.has(address.start) ?? false
  }

  set(address: WindowAddress, value: V): void {
    let byKey = this.#byWindow.get(address.window)
    if (byKey === undefined) {
      byKey = new Map()
      this.#byWindow.set(address.window, byKey)
    }
    let byStart = byKey.get(address.key)
    if (byStart === undefined) {
      byStart = new Map()
      byKey.set(address.key, byStart)
    }
    if (!byStart.has(address.start)) this.#size++
    byStart.set(address.start, value)
  }

  delete(address: WindowAddress): boolean {
    const byKey = this.#byWindow.get(address.window)
    const byStart = byKey?.get(address.key)
    if (byKey === undefined || byStart === undefined || !byStart.delete(address.start)) return false
    this.#size--
    if (byStart.size === 0) byKey.delete(address.key)
    if (byKey.size === 0) this.#byWindow.delete(address.window)
    return true
  }

  forEach(visit: (value: V, address: WindowAddress) => void): void {
    for (const [window, byKey] of this.#byWindow) {
      for (const [key, byStart] of byKey) for (const [start, value] of byStart) visit(value, { window, key, start })
    }
  }

  clear(): void {
    this.#byWindow.clear()
    this.#size = 0
  }
}
