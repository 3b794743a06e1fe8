import type { TickTimers } from '@tidemark/engine'
import type { LinkTransports } from './fleetWiring.ts'

/**
 * What a fleet host (a device's or the dashboard's, `hostEngine` in a worker) uses of the place
 * it runs in: the clock, a repeating timer, one-shot timers, a way to end itself, and its links' transports. The
 * worker files pass the platform's (`workerHostPlatform`); tests run the same hosts in Node with
 * a fake clock and timers they advance.
 *
 * @example
 * const platform: HostPlatform = { now: Date.now, random: Math.random, every: (ms, run) => { const t = setInterval(run, ms); return () => clearInterval(t) }, timers: { setTimeout, clearTimeout }, terminate: () => close(), transports: {} }
 */
export interface HostPlatform {
  /** Processing time of the host's engine and of its producer. */
  now(): number
  /** Runs `run` every `ms` until the returned function is called. */
  every(ms: number, run: () => void): () => void
  /** One-shot timers on the same clock (what `tickWhenDue` arms, and the relay client's reconnects). */
  readonly timers: TickTimers
  /** Uniform random numbers in [0, 1): the relay client's reconnect jitter. */
  random(): number
  /**
   * Ends this host as a crash ends it, once the command under way has answered: nothing is
   * closed, the log's claim and the sockets go with the worker. The pages still connected
   * notice and start the host again, which reopens the log.
   */
  terminate(): void
  readonly transports: LinkTransports
}

/**
 * The platform of a host running in a worker: `Date.now`, `Math.random`, `setInterval`, `setTimeout`, and `close()` of the
 * worker's global scope, one task after the command's answer is posted.
 *
 * @example
 * hostEngine(deviceHostOptions(self.name, workerHostPlatform()))
 */
export function workerHostPlatform(): HostPlatform {
  return {
    now: () => Date.now(),
    random: () => Math.random(),
    every(ms, run) {
      const timer = setInterval(run, ms)
      return () => clearInterval(timer)
    },
    timers: {
      setTimeout: (run, ms) => setTimeout(run, ms),
      clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
    },
    terminate() {
      const scope = globalThis as unknown as { close(): void }
      setTimeout(() => scope.close(), 0)
    },
    transports: {},
  }
}
