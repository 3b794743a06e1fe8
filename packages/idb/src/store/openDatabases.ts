/**
 * The IndexedDB databases a persistence of this page has open. Deleting one would pull it from
 * under a running engine (the connection yields to the deletion and every later write fails),
 * so `deleteSource` refuses them.
 */
const open = new Map<string, number>()

/** A persistence of this page opened `name`. */
export function markOpen(name: string): void {
  open.set(name, (open.get(name) ?? 0) + 1)
}

/** A persistence of this page closed `name` (or lost it). */
export function markClosed(name: string): void {
  const count = (open.get(name) ?? 0) - 1
  if (count > 0) open.set(name, count)
  else open.delete(name)
}

/** True while a persistence of this page has `name` open. */
export function isOpenHere(name: string): boolean {
  return open.has(name)
}
