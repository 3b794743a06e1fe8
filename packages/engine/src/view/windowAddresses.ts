/**
 * Windows addressed by spec id, series key and start, and maps nested the
 * same way, so a lookup per change builds no composite string id.
 */

/** One window: spec id, series key and start. */
export interface WindowAddress {
  readonly window: string
  readonly key: string
  readonly start: number
}

/** Latest value per window, nested by spec id, key and start (no composite string ids to build). */
export type WindowAddressMap<V> = Map<string, Map<string, Map<number, V>>>

/** The entry of `index` at `address`, or `undefined`. */
export function lookup<V>(index: WindowAddressMap<V>, address: WindowAddress): V | undefined {
  return index.get(address.window)?.get(address.key)?.get(address.start)
}

/** The per-start map of `address`'s spec and key in `index`, made when missing. */
export function startsOf<V>(index: WindowAddressMap<V>, address: WindowAddress): Map<number, V> {
  let byKey = index.get(address.window)
  if (byKey === undefined) {
    byKey = new Map()
    index.set(address.window, byKey)
  }
  let byStart = byKey.get(address.key)
  if (byStart === undefined) {
    byStart = new Map()
    byKey.set(address.key, byStart)
  }
  return byStart
}

/** Whether `a` and `b` are the same window. */
export function sameWindow(a: WindowAddress, b: WindowAddress): boolean {
  return a.start === b.start && a.key === b.key && a.window === b.window
}
