/**
 * Full-jitter reconnect delays: attempt `n` (0-based, counted since the last good connection)
 * waits a uniform random time in `[0, min(capMs, baseMs · 2^n))`, so clients that lost one
 * server together do not come back in lockstep (`connectRelay` uses it).
 */

import { assertKnownOptions } from '@tidemark/engine/adapter'

/**
 * Reconnect jitter options (`connectRelay`'s `jitter`); all optional.
 *
 * @example
 * connectRelay({ url, token, jitter: { baseMs: 300, capMs: 5_000, random: seededRandom(7) } })
 */
export interface ReconnectJitterOptions {
  /** Spread of the first reconnect after a good connection, in ms (default 500). */
  readonly baseMs?: number
  /** Largest spread, in ms (default 10,000). */
  readonly capMs?: number
  /** Spread of the first connect, in ms (default 0: connect now). */
  readonly initialMs?: number
  /** Uniform random numbers in [0, 1) (default `Math.random`); inject a seeded one in tests. */
  readonly random?: () => number
  /** Schedules connects and reconnects (default the global `setTimeout`); inject a fake clock in tests. */
  readonly setTimeout?: (callback: () => void, ms: number) => unknown
  /** Cancels what it scheduled (default the global `clearTimeout`). */
  readonly clearTimeout?: (handle: unknown) => void
  /** The clock in ms that `connectRelay` paces update messages by, and counts the 10 minutes after which a halved `maxPendingRooms` doubles again by (default `Date.now`); inject a fake one in tests. */
  readonly now?: () => number
}

/**
 * The delay window of attempt `attempt` (0-based): `min(capMs, baseMs · 2^attempt)`.
 *
 * @example
 * jitterWindow(0, 500, 10_000) // 500
 * jitterWindow(3, 500, 10_000) // 4000
 * jitterWindow(9, 500, 10_000) // 10000
 */
export function jitterWindow(attempt: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30))
}

const JITTER_OPTION_KEYS: readonly (keyof ReconnectJitterOptions)[] = ['baseMs', 'capMs', 'initialMs', 'random', 'setTimeout', 'clearTimeout', 'now']

/**
 * Checks reconnect jitter options (`where` names the function): ms are finite numbers >= 0
 * (`baseMs`, `capMs` > 0), the hooks are functions. Throws a TypeError or RangeError naming the option.
 *
 * @example
 * checkJitterOptions({ baseMs: 300, capMs: 5_000 }, 'connectRelay: jitter') // fine
 * checkJitterOptions({ baseMS: 300 }, 'connectRelay: jitter') // TypeError: ... unknown option 'baseMS' (did you mean 'baseMs'?)
 */
export function checkJitterOptions(options: ReconnectJitterOptions, where: string): void {
  if (typeof options !== 'object' || options === null) throw new TypeError(`${where} must be an object of jitter options, got ${String(options)}`)
  assertKnownOptions(where, options, JITTER_OPTION_KEYS)
  for (const [name, zero] of [['baseMs', false], ['capMs', false], ['initialMs', true]] as const) {
    const value = options[name]
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (value === 0 && !zero))) {
      throw new RangeError(`${where}: ${name} must be a finite number of ms ${zero ? '>= 0' : '> 0'}, got ${String(value)}`)
    }
  }
  for (const name of ['random', 'setTimeout', 'clearTimeout', 'now'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw new TypeError(`${where}: ${name} must be a function`)
  }
}
