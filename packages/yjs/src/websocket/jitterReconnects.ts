/**
 * Jittered (re)connects for y-websocket's `WebsocketProvider`; goes with `connectWebsocket`
 * (see websocket.ts: to be removed once nothing syncs through y-websocket).
 *
 * y-websocket backs off as `min(100 · 2^failures, maxBackoffTime)` with no randomness, so
 * when a server restarts every client reconnects in lockstep, again and again. This spreads
 * them with full jitter (`jitterWindow`).
 *
 * How, without forking the provider: it emits `connection-close` just before it schedules
 * the next attempt with `min(100 · 2^wsUnsuccessfulReconnects, maxBackoffTime)`. The
 * listener sets `maxBackoffTime` to the jittered delay and raises `wsUnsuccessfulReconnects`
 * just enough that the exponential term does not cut it short. The provider's own rules
 * (a `disconnect()` stays disconnected, close codes 4400-4499 are permanent) are untouched.
 */
import { checkJitterOptions, jitterWindow, type ReconnectJitterOptions } from '../transport/reconnectJitter.ts'

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

/** y-websocket's backoff unit, in ms. */
const PROVIDER_UNIT_MS = 100

/**
 * Adds jitter to a provider's reconnects (and, optionally, to its first connect).
 * Returns a function that removes it and cancels a pending first connect.
 *
 * @deprecated y-websocket goes with `connectWebsocket`; `connectRelay` jitters its own reconnects.
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

