/**
 * A window's address: spec id, key, start, and, to tell apart the windows of a cumulating spec
 * (they share their start), its end. Outside cumulating specs the start alone names a window of
 * a key, so `end` is not part of the address there.
 */
export interface WindowAddress {
  readonly window: string
  readonly key: string
  readonly start: number
  readonly end?: number
}

const CUMULATING = 'cumulating:'

/** Whether windows of spec `window` share their start (a cumulating spec: `cumulating:<size>:<step>`). */
export function sharesStart(window: string): boolean {
  return window.startsWith(CUMULATING)
}

/** Whether `window` names a session spec (`session:<gap>`): its windows' ends move. */
export function isSessionSpec(window: string): boolean {
  return window.startsWith('session:')
}

/** The length of spec `window`'s windows (the size in its id), or NaN for a session spec or an id it cannot read. */
export function specSize(window: string): number {
  const colon = window.indexOf(':')
  if (colon < 0 || isSessionSpec(window)) return Number.NaN
  return Number(window.slice(colon + 1).split(':')[0])
}

/**
 * Where `address` sits among its spec's and key's windows: its start, or a cumulating
 * window's end (without an end, the window covering the whole period, as `engine.history` takes it).
 */
export function positionOf(address: WindowAddress): number {
  if (!sharesStart(address.window)) return address.start
  return address.end ?? address.start + specSize(address.window)
}

/** `address` with only what names the window: spec, key, start, and a cumulating window's end. */
export function addressOf(address: WindowAddress): WindowAddress {
  const { window, key, start } = address
  return sharesStart(window) ? { window, key, start, end: positionOf(address) } : { window, key, start }
}

/** Whether `a` and `b` name the same window. */
export function sameAddress(a: WindowAddress, b: WindowAddress): boolean {
  return a.start === b.start && a.key === b.key && a.window === b.window && positionOf(a) === positionOf(b)
}
