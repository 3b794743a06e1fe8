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
