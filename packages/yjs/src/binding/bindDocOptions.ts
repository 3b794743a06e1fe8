import { assertKnownOptions } from '@tidemark/engine/adapter'

/**
 * Options of `bindDoc`; all optional.
 *
 * @example
 * bindDoc(engine, doc, { onError: (error) => console.warn(error.message), measureEvery: 10_000 })
 */
export interface BindDocOptions {
  /** Origin of this replica's transactions (default: a private object). */
  readonly origin?: unknown
  /**
   * Receives a `ConfigurationMismatchError` for each peer replica whose state is refused, and
   * any error the binding caught rather than throw into Yjs. Every such error is also kept in
   * the engine's `stats().replicationError`. Default: `console.error`.
   */
  readonly onError?: (error: Error) => void
  /** Processing-time clock for sync status and doc measurement (default `Date.now`). */
  readonly now?: () => number
  /** Measure the encoded doc for `docBytes` at most this often after bind (where it is measured as found), in ms of `now` (default 5000): encoding costs about as much as the doc is large. */
  readonly measureEvery?: number
  /** Most replicas a doc may list; further meta entries are refused (default 10,000). */
  readonly maxReplicas?: number
  /**
   * Merge what peers write and never write to the doc (default false): no meta entry, no log,
   * no expiry, nothing of the engine's local writes. For dashboards, whose relay connection is
   * read-only: such a doc never has an update to send.
   */
  readonly readOnly?: boolean
}

const OPTION_KEYS: readonly (keyof BindDocOptions)[] = ['origin', 'onError', 'now', 'measureEvery', 'maxReplicas', 'readOnly']

/**
 * Throws a TypeError or RangeError naming the first bad option of `bindDoc`, so a mistyped or
 * out-of-range option fails at the call rather than as a binding that quietly does otherwise.
 *
 * @example
 * checkBindDocOptions({ measureEvery: -1 }) // RangeError: bindDoc: measureEvery must be a number of ms >= 0 ...
 */
export function checkBindDocOptions(options: BindDocOptions): void {
  if (typeof options !== 'object' || options === null) throw new TypeError('bindDoc: options must be an object')
  assertKnownOptions('bindDoc', options, OPTION_KEYS)
  for (const name of ['onError', 'now'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw new TypeError(`bindDoc: ${name} must be a function, got ${String(options[name])}`)
  }
  const { measureEvery, maxReplicas, readOnly } = options
  if (readOnly !== undefined && typeof readOnly !== 'boolean') throw new TypeError(`bindDoc: readOnly must be true or false, got ${String(readOnly)}`)
  if (measureEvery !== undefined && (typeof measureEvery !== 'number' || Number.isNaN(measureEvery) || measureEvery < 0)) {
    throw new RangeError(`bindDoc: measureEvery must be a number of ms >= 0 (Infinity: measure once), got ${String(measureEvery)}`)
  }
  if (maxReplicas !== undefined && (!Number.isSafeInteger(maxReplicas) || maxReplicas < 1)) {
    throw new RangeError(`bindDoc: maxReplicas must be an integer >= 1, got ${String(maxReplicas)}`)
  }
}
