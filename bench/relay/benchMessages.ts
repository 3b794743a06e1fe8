/**
 * What the relay benchmark's processes tell each other over their IPC channels: the
 * orchestrator (relayBench.ts) drives the device simulator (deviceSimulator.ts) and the
 * dashboards (dashboardFleet.ts) through phases and collects their figures.
 */
import type { FleetLayout } from './fleetLayout.ts'
import type { LatencySummary } from './latencyHistogram.ts'

/**
 * How a child process of the benchmark starts: the layout, where to connect, the tokens' secret.
 *
 * @example
 * const config: ChildConfig = { layout, relayUrl: 'ws://127.0.0.1:40001', secret: '…', reconnectSpreadMs: 5_000 }
 */
export interface ChildConfig {
  readonly layout: FleetLayout
  readonly relayUrl: string
  readonly secret: string
  /** Devices: the spread of their reconnect jitter (and of their first connect). */
  readonly reconnectSpreadMs: number
}

/**
 * The orchestrator to the device simulator.
 *
 * @example
 * simulator.send({ type: 'drop', spreadMs: 5_000 } satisfies ToDevices)
 */
export type ToDevices =
  | { readonly type: 'start'; readonly config: ChildConfig }
  /** Every device socket is dropped now; each device reconnects at a uniform random time within `spreadMs`. */
  | { readonly type: 'drop'; readonly spreadMs: number }
  /** The relay is about to be disrupted (restarted): report once every device synced again. */
  | { readonly type: 'watch-resync'; readonly at: number; readonly timeoutMs: number }
  | { readonly type: 'counters' }
  | { readonly type: 'stop' }

/**
 * Counters of the device simulator since it started.
 *
 * @example
 * const counters: DeviceCounters = { sent: 600_000, bytes: 165_000_000, connected: 1000, sendLag, anomalies: 0, refusals: 0, errors: 0 }
 */
export interface DeviceCounters {
  /** Updates sent (one engine batch each). */
  readonly sent: number
  /** Their bytes, as Yjs encoded them. */
  readonly bytes: number
  /** Devices whose room is in sync now. */
  readonly connected: number
  /** How late the simulator recorded each update against its schedule (ms): the simulator's own lag. */
  readonly sendLag: LatencySummary
  /** Readings the device engines rejected (should be 0). */
  readonly anomalies: number
  /** Rooms the relay refused (should be 0). */
  readonly refusals: number
  /** Errors the relay clients reported. */
  readonly errors: number
}

/**
 * When every device was back in sync after a disruption, and what each had recorded by then.
 *
 * @example
 * const resync: DeviceResync = { disruptedAt, targets: { 'fleet-00-d000': 1803 }, lastResyncMs: 4_870, missing: [] }
 */
export interface DeviceResync {
  readonly disruptedAt: number
  /** Per source: the last seq it had recorded when its room was in sync again (what dashboards must show). */
  readonly targets: Readonly<Record<string, number>>
  /** From the disruption to the last device back in sync. */
  readonly lastResyncMs: number
  /** Sources not back in sync before the timeout. */
  readonly missing: readonly string[]
}

/**
 * The device simulator to the orchestrator.
 *
 * @example
 * process.send?.({ type: 'ready', connectMs: 5_400 } satisfies FromDevices)
 */
export type FromDevices =
  | { readonly type: 'ready'; readonly connectMs: number }
  | { readonly type: 'counters'; readonly counters: DeviceCounters }
  | { readonly type: 'dropped'; readonly at: number }
  | { readonly type: 'resynced'; readonly resync: DeviceResync }
  /** Per room: the bytes of every update its device sent over the run, and their number. */
  | { readonly type: 'final'; readonly rawBytes: Readonly<Record<string, number>>; readonly updates: Readonly<Record<string, number>>; readonly counters: DeviceCounters }
  | { readonly type: 'error'; readonly message: string }

/**
 * The orchestrator to the dashboards. Latencies are kept per phase; `interval` reads and resets
 * the running interval (the per-minute rows).
 *
 * @example
 * dashboards.send({ type: 'phase', name: 'steady' } satisfies ToDashboards)
 */
export type ToDashboards =
  | { readonly type: 'start'; readonly config: ChildConfig }
  | { readonly type: 'phase'; readonly name: string }
  | { readonly type: 'interval' }
  | { readonly type: 'converge'; readonly resync: DeviceResync; readonly timeoutMs: number }
  | { readonly type: 'totals' }
  | { readonly type: 'stop' }

/**
 * How long the dashboards took to show what the devices had recorded when they were back.
 *
 * @example
 * const convergence: Convergence = { ms: 6_210, perDashboardMs: [5_900, 6_210], pending: 0 }
 */
export interface Convergence {
  /** From the disruption until the last dashboard showed every device's target (NaN when some never did). */
  readonly ms: number
  readonly perDashboardMs: readonly number[]
  /** (dashboard, device) pairs still short of the target at the timeout. */
  readonly pending: number
}

/**
 * Latencies of one phase or interval, seen by every dashboard together.
 *
 * @example
 * const figures: ArrivalFigures = { latency, arrivals: 120_000, coalesced: 3 }
 */
export interface ArrivalFigures {
  readonly latency: LatencySummary
  /** Merges that made a device's readings visible on a dashboard. */
  readonly arrivals: number
  /**
   * Of those, merges that brought several updates of a device at once: each update is one latency
   * sample, the older ones' estimated as the newest one's plus the send period per update.
   */
  readonly coalesced: number
}

/**
 * How long a process's event loop kept work waiting over an interval, p99 and max, in ms
 * (`monitorEventLoopDelay`, 10 ms resolution, as the relays' `/metrics` report theirs).
 *
 * @example
 * const delay: LoopDelay = { p99: 31.2, max: 88.1 }
 */
export interface LoopDelay {
  readonly p99: number
  readonly max: number
}

/**
 * The dashboards to the orchestrator.
 *
 * @example
 * process.send?.({ type: 'ready', rooms: [100, 100], sourcesSeen: [100, 100] } satisfies FromDashboards)
 */
export type FromDashboards =
  | { readonly type: 'ready'; readonly rooms: readonly number[]; readonly sourcesSeen: readonly number[] }
  | { readonly type: 'interval'; readonly figures: ArrivalFigures; readonly loopDelayMs: LoopDelay }
  | { readonly type: 'converged'; readonly convergence: Convergence }
  | { readonly type: 'totals'; readonly phases: Readonly<Record<string, ArrivalFigures>>; readonly refusals: number; readonly errors: number; readonly engineAnomalies: number }
  | { readonly type: 'error'; readonly message: string }
