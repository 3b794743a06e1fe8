import type { TickTimers } from '@tidemark/engine'
import type { ReconnectJitterOptions } from '@tidemark/yjs'

/**
 * How every relay client of the fleet (each device's and the dashboard's) reconnects: attempt
 * `n` since its rooms were last in sync waits a uniform random time in
 * `[0, min(capMs, baseMs · 2^n))`, so a fleet does not hit a restarted relay in lockstep. Once
 * the relay answers again, a client is back within `capMs` plus its handshake.
 */
export const RELAY_RECONNECT = { baseMs: 300, capMs: 5_000 } as const

/**
 * Time a device needs after its reconnect attempt to be heard by the dashboard: its token from
 * the relay's endpoint, the socket, the room opened from the relay's store, its backlog up and
 * across to the dashboard. Well under a second on a loopback relay; 2 s leaves room for a busy
 * machine.
 */
export const RELAY_HANDSHAKE_MS = 2_000

/**
 * The longest silence a device's own reconnect explains once the relay answers again:
 * `RELAY_RECONNECT.capMs + RELAY_HANDSHAKE_MS` (7 s).
 */
export const DEVICE_RECONNECT_BOUND_MS = RELAY_RECONNECT.capMs + RELAY_HANDSHAKE_MS

/** What a relay client's reconnects run on: the host's clock, timers and random numbers. */
export interface ReconnectClock {
  readonly now: () => number
  readonly timers: TickTimers
  readonly random: () => number
}

/**
 * `connectRelay`'s `jitter` option: `RELAY_RECONNECT` on the host's clock, timers and random
 * numbers (a worker's are the platform's; a test's are fake and seeded).
 *
 * @example
 * connectRelay({ url, token, jitter: relayJitter({ now: Date.now, timers: { setTimeout, clearTimeout }, random: Math.random }) })
 */
export function relayJitter(clock: ReconnectClock): ReconnectJitterOptions {
  return {
    ...RELAY_RECONNECT,
    random: clock.random,
    now: clock.now,
    setTimeout: (run, ms) => clock.timers.setTimeout(run, ms),
    clearTimeout: (handle) => clock.timers.clearTimeout(handle),
  }
}
