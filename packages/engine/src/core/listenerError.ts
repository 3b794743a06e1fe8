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
