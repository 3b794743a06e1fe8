/**
 * Jittered (re)connects for y-websocket's `WebsocketProvider`.
 *
 * y-websocket backs off as `min(100 · 2^failures, maxBackoffTime)` with no randomness, so
 * when a server restarts every client reconnects in lockstep, again and again. This spreads
 * them with "full jitter": attempt `n` (counted since the last successful sync) waits a
 * uniform random time in `[0, min(capMs, baseMs · 2^n))`.
 *
 * How, without forking the provider: it emits `connection-close` just before it schedules
 * the next attempt with `min(100 · 2^wsUnsuccessfulReconnects, maxBackoffTime)`. The
 * listener sets `maxBackoffTime` to the jittered delay and raises `wsUnsuccessfulReconnects`
 * just enough that the exponential term does not cut it short. The provider's own rules
 * (a `disconnect()` stays disconnected, close codes 4400-4499 are permanent) are untouched.
 */

import { assertKnownOptions } from '@tidemark/engine/adapter'

/** The members of y-websocket 3.x's `WebsocketProvider` this helper reads and writes. */
export interface JitteredProvider {
  maxBackoffTime: number
  wsUnsuccessfulReconnects: number
  readonly shouldConnect: boolean
  readonly wsconnected: boolean
  readonly wsconnecting: boolean
  /** Starts (re)connecting. */
  connect(): void
  /** y-websocket emits `connection-close` just before it schedules the next attempt. */
  on(name: 'connection-close', listener: (event: unknown, provider: never) => void): unknown
  /** `sync(true)` after a good sync resets the attempt count. */
  on(name: 'sync', listener: (synced: boolean) => void): unknown
  /** Removes a `connection-close` listener. */
  off(name: 'connection-close', listener: (event: unknown, provider: never) => void): unknown
  /** Removes a `sync` listener. */
  off(name: 'sync', listener: (synced: boolean) => void): unknown
}

/**
 * Options of `jitterReconnects` (and `connectWebsocket`'s `jitter`); all optional.
 *
 * @example
 * jitterReconnects(provider, { baseMs: 300, capMs: 5_000, random: seededRandom(7) })
 */
export interface ReconnectJitterOptions {
  /** Spread of the first reconnect after a good connection, in ms (default 500). */
  readonly baseMs?: number
  /** Largest spread, in ms (default 10,000). */
  readonly capMs?: number
  /**
   * Spread of the first connect, in ms (default 0: connect now). Only used when the
   * provider was created with `connect: false`.
   */
  readonly initialMs?: number
  /** Uniform random numbers in [0, 1) (default `Math.random`); inject a seeded one in tests. */
  readonly random?: () => number
  /** Schedules the first connect (default the global `setTimeout`); inject a fake one in tests. */
  readonly setTimeout?: (callback: () => void, ms: number) => unknown
  /** Cancels it (default the global `clearTimeout`). */
  readonly clearTimeout?: (handle: unknown) => void
}

/** y-websocket's backoff unit, in ms. */
const PROVIDER_UNIT_MS = 100

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

/**
 * Adds jitter to a provider's reconnects (and, optionally, to its first connect).
 * Returns a function that removes it and cancels a pending first connect.
 *
 * @example
 * const provider = new WebsocketProvider(url, room, doc, { connect: false })
 * const stop = jitterReconnects(provider, { initialMs: 2_000 })
 */
export function jitterReconnects(provider: JitteredProvider, options: ReconnectJitterOptions = {}): () => void {
  checkJitterOptions(options, 'jitterReconnects')
  const baseMs = options.baseMs ?? 500
  const capMs = options.capMs ?? 10_000
  const random = options.random ?? Math.random
  const schedule = options.setTimeout ?? ((callback, ms) => setTimeout(callback, ms))
  const cancel = options.clearTimeout ?? ((handle) => clearTimeout(handle as ReturnType<typeof setTimeout>))
  let attempt = 0

  const onClose = (): void => {
    if (!provider.shouldConnect) return
    const delay = Math.floor(random() * jitterWindow(attempt, baseMs, capMs))
    attempt++
    provider.maxBackoffTime = delay
    // The provider increments the counter right after this event, then waits min(100 · 2^counter, maxBackoffTime).
    const needed = Math.max(0, Math.ceil(Math.log2(Math.max(delay, 1) / PROVIDER_UNIT_MS)) - 1)
    if (provider.wsUnsuccessfulReconnects < needed) provider.wsUnsuccessfulReconnects = needed
  }
  const onSync = (synced: boolean): void => {
    if (synced) attempt = 0
  }
  provider.on('connection-close', onClose)
  provider.on('sync', onSync)

  let first: unknown = null
  const initialMs = options.initialMs ?? 0
  if (!provider.shouldConnect && !provider.wsconnected && !provider.wsconnecting) {
    if (initialMs > 0) {
      first = schedule(() => {
        first = null
        provider.connect()
      }, Math.floor(random() * initialMs))
    } else {
      provider.connect()
    }
  }

  return () => {
    provider.off('connection-close', onClose)
    provider.off('sync', onSync)
    if (first !== null) cancel(first)
    first = null
  }
}

const JITTER_OPTION_KEYS: readonly (keyof ReconnectJitterOptions)[] = ['baseMs', 'capMs', 'initialMs', 'random', 'setTimeout', 'clearTimeout']

/**
 * Checks reconnect jitter options (`where` names the function): ms are finite numbers >= 0
 * (`baseMs`, `capMs` > 0), the hooks are functions. Throws a TypeError or RangeError naming the option.
 *
 * @example
 * checkJitterOptions({ baseMs: 300, capMs: 5_000 }, 'connectWebsocket: jitter') // fine
 * checkJitterOptions({ baseMS: 300 }, 'connectWebsocket: jitter') // TypeError: ... unknown option 'baseMS' (did you mean 'baseMs'?)
 */
export function checkJitterOptions(options: ReconnectJitterOptions, where: string): void {
  if (typeof options !== 'object' || options === null) throw new TypeError(`${where} must be an object of jitter options, got ${String(options)}`)
  assertKnownOptions(where, options, JITTER_OPTION_KEYS)
  for (const [name, min] of [['baseMs', 1], ['capMs', 1], ['initialMs', 0]] as const) {
    const value = options[name]
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value < min)) {
      throw new RangeError(`${where}: ${name} must be a finite number of ms ${min === 0 ? '>= 0' : '> 0'}, got ${String(value)}`)
    }
  }
  for (const name of ['random', 'setTimeout', 'clearTimeout'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw new TypeError(`${where}: ${name} must be a function`)
  }
}
