/**
 * Where the relay reports what happens to it.
 */
import { OpenRefused } from './protocol/refusal.ts'

/**
 * Log levels: `info` (rooms refused, updates refused, compactions), `warn` (retried store
 * writes, Redis trouble), `error` (what an operator must look at).
 *
 * @example
 * const level: RelayLogLevel = 'warn'
 */
export type RelayLogLevel = 'info' | 'warn' | 'error'

/**
 * Receives the relay's log lines.
 *
 * @example
 * const log: RelayLog = (level, message) => { if (level !== 'info') console.error(`${level}: ${message}`) }
 */
export type RelayLog = (level: RelayLogLevel, message: string) => void

const ORDER: Record<RelayLogLevel, number> = { info: 0, warn: 1, error: 2 }

/**
 * A log that writes lines from `least` up to stderr as `tidemark-relay <level>: <message>`.
 *
 * @example
 * const log = stderrLog('warn') // info lines are dropped
 */
export function stderrLog(least: RelayLogLevel): RelayLog {
  return (level, message) => {
    if (ORDER[level] >= ORDER[least]) process.stderr.write(`tidemark-relay ${level}: ${message}\n`)
  }
}

/**
 * A short text for an error of unknown type, never empty: a room refused to open (whose error
 * has no message, see `OpenRefused`) reads as the refusal, and another error without a message
 * as its `cause` or, lacking one, its name.
 *
 * @example
 * log('warn', `store write failed: ${describeError(error)}`)
 * describeError(new OpenRefused(new Refusal('store-unavailable'))) // 'refused: store-unavailable'
 */
export function describeError(error: unknown): string {
  return describeAt(error, 0)
}

/** Causes followed at most this deep (a cause may be the error itself). */
const MAX_CAUSES = 3

function describeAt(error: unknown, depth: number): string {
  if (error instanceof OpenRefused) return `refused: ${error.refusal.text}`
  if (!(error instanceof Error)) return typeof error === 'object' && error !== null ? JSON.stringify(error) ?? String(error) : String(error)
  if (error.message !== '') return error.message
  const inner = error instanceof AggregateError && error.errors.length > 0 ? error.errors[0] : error.cause
  return inner === undefined || depth >= MAX_CAUSES ? error.name : `${error.name}: ${describeAt(inner, depth + 1)}`
}
