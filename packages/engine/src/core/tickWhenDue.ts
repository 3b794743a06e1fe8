import type { Engine } from './engineApi.ts'
import { reportListenerError } from '../errors/listenerError.ts'

/** One-shot timers, as `tickWhenDue` arms them (`ManualTimers` from `@tidemark/engine/testing` in tests). */
export interface TickTimers {
  /** Runs `run` once, `ms` from now; returns what `clearTimeout` takes. */
  setTimeout(run: () => void, ms: number): unknown
  /** Cancels a timer `setTimeout` returned, if it has not run. */
  clearTimeout(handle: unknown): void
}

/** `tickWhenDue`'s options. */
export interface TickWhenDueOptions {
  /** Processing time on the engine's clock (default `Date.now`): pass the engine's `now` option when it has one. */
  readonly now?: () => number
  /** Default: the global timers, which do not hold a Node process open on their own. */
  readonly timers?: TickTimers
  /**
   * Where the error of a tick this timer ran goes: an aggregate that throws while a pane is made
   * stops the engine (`engine stopped: …`), and the ticks stop with it. Default: reported as an
   * uncaught error, which a browser shows in the console (`window.onerror`) and which ends a Node
   * process; on a server running several engines, give one.
   */
  readonly onError?: (error: unknown) => void
}

/**
 * The global timers, as `tickWhenDue` and adapters (a refill's bound) arm them by default: a
 * pending one does not keep a Node process alive on its own.
 *
 * @example
 * const handle = GLOBAL_TICK_TIMERS.setTimeout(() => console.log('due'), 1_000)
 * GLOBAL_TICK_TIMERS.clearTimeout(handle)
 */
export const GLOBAL_TICK_TIMERS: TickTimers = {
  setTimeout(run, ms) {
    const timer = globalThis.setTimeout(run, ms)
    ;(timer as { unref?: () => void }).unref?.()
    return timer
  },
  clearTimeout(handle) {
    globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>)
  },
}

/** The engine calls `tickWhenDue` makes. */
export type TickedEngine = Pick<Engine, 'tick' | 'nextTickAt' | 'subscribe' | 'replica'>

/** How long to wait before ticking again when the engine's clock lags the one given (a tick at the deadline found nothing due). */
const RETRY_MS = 1_000
/** The longest wait a timer takes: `setTimeout` runs a longer one at once. */
const MAX_WAIT_MS = 2 ** 31 - 1

/**
 * Ticks `engine` whenever `tick()` has work (`nextTickAt()`), and never otherwise: each
 * processing-time pane fires at its deadline, a silent source turns idle on time, and an engine
 * with a write-ahead log writes no record for ticks that would change nothing (an interval of one
 * second writes 86,400 a day). One timer at a time, armed again after every operation the engine
 * reports (ingest, merge, watermark move, tick). Stops when the engine closes, or when the
 * returned function is called.
 *
 * `now` must read the engine's clock: when it runs ahead of the engine's `now`, a tick
 * finds nothing due yet and the next one waits a second. A timer that fires early (by `now`)
 * waits for the rest, and a wait beyond what `setTimeout` takes (about 24.8 days) is cut in parts.
 *
 * @example
 * const engine = createEngine({ windows: tumbling(60_000), idleTimeout: 30_000, trigger: { early: afterProcessingTime(5_000) } })
 * const stop = tickWhenDue(engine) // instead of setInterval(() => engine.tick(), 1_000)
 * stop() // or engine.close()
 * // in a test: tickWhenDue(engine, { now: clock.read, timers: clock }) with clock = new ManualTimers()
 * // on a server: tickWhenDue(engine, { onError: (error) => log.error({ error }, 'engine stopped') })
 */
export function tickWhenDue(engine: TickedEngine, options: TickWhenDueOptions = {}): () => void {
  const now = options.now ?? Date.now
  const timers = options.timers ?? GLOBAL_TICK_TIMERS
  let handle: unknown = null
  let stopped = false
  /** The deadline the last tick ran for. */
  let ranFor = Number.NEGATIVE_INFINITY
  const disarm = (): void => {
    if (handle !== null) timers.clearTimeout(handle)
    handle = null
  }
  const arm = (): void => {
    disarm()
    if (stopped) return
    const at = engine.nextTickAt()
    // Nothing due; NaN (a deadline from a hand-made checkpoint) is not a time, and a timer of NaN ms would run at once, for ever.
    if (!(at < Number.POSITIVE_INFINITY)) return
    const time = now()
    let wait = Math.min(Math.max(0, at - time), MAX_WAIT_MS)
    // A deadline a tick already ran for: at or after it, the engine's clock is behind `now`;
    // before it, the timer fired early, or a long wait was cut in parts, and the rest is waited.
    if (at <= ranFor) wait = time >= at ? RETRY_MS : Math.max(1, wait)
    // A `now` that read no time: a timer of NaN ms runs at once, and its tick arms the next at once again.
    if (Number.isNaN(wait)) wait = RETRY_MS
    handle = timers.setTimeout(() => {
      handle = null
      ranFor = at
      // Its notification arms the next timer.
      try {
        engine.tick()
      } catch (error) {
        ;(options.onError ?? reportListenerError)(error)
      }
    }, wait)
  }
  let unsubscribe = (): void => {}
  let stopOnClose = (): void => {}
  const stop = (): void => {
    if (stopped) return
    stopped = true
    unsubscribe()
    stopOnClose()
    disarm()
  }
  // Called at once when the engine is closed already.
  stopOnClose = engine.replica.onClose(stop)
  if (stopped) throw new Error('tickWhenDue: the engine is closed')
  unsubscribe = engine.subscribe(arm)
  arm()
  return stop
}
