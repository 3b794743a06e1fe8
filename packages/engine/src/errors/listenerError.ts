/**
 * Reports an error a listener threw without stopping the loop that called it: the other
 * listeners still hear the change. Uses the platform's `reportError` where there is one (the
 * error reaches `window.onerror` and the console), else rethrows it in a microtask so it
 * still surfaces as an uncaught error.
 *
 * @example
 * for (const listener of listeners) {
 *   try {
 *     listener(changes)
 *   } catch (error) {
 *     reportListenerError(error)
 *   }
 * }
 */
export function reportListenerError(error: unknown): void {
  const report = (globalThis as { reportError?: (e: unknown) => void }).reportError
  if (typeof report === 'function') report(error)
  else queueMicrotask(() => {
    throw error
  })
}

/**
 * Calls every listener with `value`; one that throws is reported (`reportListenerError`) and the
 * others still run, so the caller (a batch, a close) goes on.
 *
 * @example
 * notifyEach(listeners, write)
 */
export function notifyEach<T>(listeners: Iterable<(value: T) => void>, value: T): void {
  for (const listener of listeners) {
    try {
      listener(value)
    } catch (error) {
      reportListenerError(error)
    }
  }
}

/**
 * `listener` when it is a function; else a TypeError naming `where` (a call from plain
 * JavaScript), thrown at once rather than by every later notification.
 *
 * @example
 * this.#listeners.add(listenerOf(listener, 'subscribe'))
 */
export function listenerOf<T>(listener: T, where: string): T {
  if (typeof listener !== 'function') throw new TypeError(`${where} needs a function, got ${String(listener)}`)
  return listener
}
