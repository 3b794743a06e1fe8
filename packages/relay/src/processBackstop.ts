/**
 * The last line for a process that is only a relay: a promise rejection nobody handled is
 * logged and counted instead of ending the process (Node's default), so one overlooked path in
 * a dependency cannot take every room down.
 */
import type { RelayMetrics } from './metrics/relayMetrics.ts'
import type { RelayLog } from './relayLog.ts'

/**
 * Installs the backstop; returns the function that removes it.
 *
 * @example
 * const uninstall = installProcessBackstop(metrics, log)
 * // later
 * uninstall()
 */
export function installProcessBackstop(metrics: RelayMetrics, log: RelayLog): () => void {
  const onRejection = (reason: unknown): void => {
    metrics.unhandledRejections++
    const detail = reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)
    log('error', `unhandled promise rejection (the relay keeps running): ${detail}`)
  }
  process.on('unhandledRejection', onRejection)
  return () => {
    process.off('unhandledRejection', onRejection)
  }
}
