/**
 * Windows addressed by spec id, series key and position, and maps nested the same way, so a
 * lookup per change builds no composite string id. A window's position is its start, except
 * in a cumulating spec, whose windows share their start: there it is the window's end.
 */

/** One window: spec id, series key, start, and, to tell the windows of a cumulating spec apart, its end (without it, the one ending last). */
export interface WindowAddress {
  readonly window: string
  readonly key: string
  readonly start: number
  readonly end?: number
}

/** Latest value per window, nested by spec id, key and position (no composite string ids to build). */
export type WindowAddressMap<V> = Map<string, Map<string, Map<number, V>>>

/** Where `address` sits among its spec's and key's windows: its start, or a cumulating window's end. */
export function positionOf(address: WindowAddress): number {
  const spec = address.window
  if (!spec.startsWith('cumulating:')) return address.start
  // A cumulating id is `cumulating:<size>:<step>`: without an end, the window covering the whole period.
  return address.end ?? address.start + Number(spec.split(':')[1])
}

/** The entry of `index` at `address`, or `undefined`. */
export function lookup<V>(index: WindowAddressMap<V>, address: WindowAddress): V | undefined {
  return index.get(address.window)?.get(address.key)?.get(positionOf(address))
}

/** Sets the entry of `index` at `address`. */
export function place<V>(index: WindowAddressMap<V>, address: WindowAddress, value: V): void {
  positionsOf(index, address).set(positionOf(address), value)
}

/** The per-position map of `address`'s spec and key in `index`, made when missing. */
export function positionsOf<V>(index: WindowAddressMap<V>, address: WindowAddress): Map<number, V> {
  let byKey = index.get(address.window)
  if (byKey === undefined) {
    byKey = new Map()
    index.set(address.window, byKey)
  }
  let byPosition = byKey.get(address.key)
  if (byPosition === undefined) {
    byPosition = new Map()
    byKey.set(address.key, byPosition)
  }
  return byPosition
}

/** Whether `a` and `b` are the same window. */
export function sameWindow(a: WindowAddress, b: WindowAddress): boolean {
  return a.start === b.start && a.key === b.key && a.window === b.window && positionOf(a) === positionOf(b)
}
