/**
 * Reports an error nobody awaits to the global error handler (`reportError`: the console and
 * the page's `error` event), or to the console where there is none.
 *
 * @example
 * engine.close().catch(reportError)
 */
export function reportError(error: unknown): void {
  const report = (globalThis as { reportError?: (e: unknown) => void }).reportError
  if (typeof report === 'function') report(error)
  else console.error(error)
}

/**
 * The rejection handler of a lock request that the code may withdraw itself through `signal`:
 * the `AbortError` of that withdrawal is expected and ignored; any other failure is reported.
 *
 * @example
 * const controller = new AbortController()
 * navigator.locks.request(name, { signal: controller.signal }, onGranted).catch(reportUnlessWithdrawn(controller.signal))
 * controller.abort() // no report: this code withdrew the request
 */
export function reportUnlessWithdrawn(signal: AbortSignal): (error: unknown) => void {
  return (error) => {
    if (signal.aborted && (error === signal.reason || isAbortError(error))) return
    reportError(error)
  }
}

/**
 * Whether `error` is an `AbortError` (a withdrawn lock request, or a lock another request broke with `steal`).
 *
 * @example
 * isAbortError(new DOMException('Lock broken by another request', 'AbortError')) // true
 */
export function isAbortError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError'
}
