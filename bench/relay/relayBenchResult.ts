/**
 * The figures of one relay benchmark run, as written to `relay-latest.json` and rendered into
 * `relay-latest.md` (relayReport.ts).
 */
import type { RelayStoreKind } from './benchFlags.ts'
import type { ArrivalFigures, Convergence, LoopDelay } from './benchMessages.ts'
import type { FleetLayout } from './fleetLayout.ts'
import type { LatencySummary } from './latencyHistogram.ts'
import { leastSquaresSlope } from './leastSquaresSlope.ts'

/**
 * One row of the per-minute table of the steady phase.
 *
 * @example
 * const row: MinuteRow = { minute: 1, load: 2.4, latency, coalesced: 0, updatesPerSecond: 998, cpuPercent: { 'relay A': 31 }, rssMb: { A: 301, B: 288 }, heapUsedMb: { A: 90, B: 70 }, arrayBuffersMb: { A: 180, B: 170 }, timers: { A: 12, B: 9 }, roomsLoaded: { A: 1010, B: 1010 }, storedBytesA: 4_100_000 }
 */
export interface MinuteRow {
  readonly minute: number
  /** 1-minute load average when the row was taken. */
  readonly load: number
  /** Dashboards' latencies over this minute. */
  readonly latency: LatencySummary
  readonly coalesced: number
  /** Updates relay A accepted per second over this minute. */
  readonly updatesPerSecond: number
  /** CPU of each process over this minute, as a percentage of one core. */
  readonly cpuPercent: Readonly<Record<string, number>>
  readonly rssMb: { readonly A: number; readonly B: number }
  /** V8 heap in use (`nodejs_heap_size_used_bytes`), garbage not yet collected included. */
  readonly heapUsedMb: { readonly A: number; readonly B: number }
  /**
   * V8 heap size (`nodejs_heap_size_total_bytes`): RSS minus it is the relay's memory outside
   * the JS heap (PGlite's WebAssembly memory on its own thread, Node's own, buffers). Absent in
   * records taken before the bench read it.
   */
  readonly heapTotalMb?: { readonly A: number; readonly B: number }
  /** ArrayBuffers of the relay's thread (`nodejs_array_buffers_bytes`; PGlite's memory is on its own thread). */
  readonly arrayBuffersMb: { readonly A: number; readonly B: number }
  /**
   * The event loop's delay over this minute, in ms: the relays' (`nodejs_eventloop_lag_p99_seconds`,
   * `_max_seconds`) and the dashboards' process's, whose waits are part of the latency measured
   * (absent in records taken before the bench read it).
   */
  readonly loopDelayMs: { readonly A: LoopDelay; readonly B: LoopDelay; readonly dashboards?: LoopDelay }
  /** Timers keeping the event loop alive (`nodejs_active_resources{type="Timeout"}`). */
  readonly timers: { readonly A: number; readonly B: number }
  readonly roomsLoaded: { readonly A: number; readonly B: number }
  /** Relay A's `tidemark_relay_stored_bytes`: its PGlite directory, or the PostgreSQL database both relays write. */
  readonly storedBytesA: number
}

/**
 * One reconnect scenario.
 *
 * @example
 * const run: ReconnectRun = { name: 'sockets dropped', description: '…', convergence, lastResyncMs: 4_900, devicesMissing: 0, relayDowntimeMs: null }
 */
export interface ReconnectRun {
  readonly name: string
  readonly description: string
  readonly convergence: Convergence
  /** From the disruption until the last device was back in sync. */
  readonly lastResyncMs: number
  readonly devicesMissing: number
  /** Restart only: from SIGTERM until the new relay process printed its ready line. */
  readonly relayDowntimeMs: number | null
  /** Latencies of the readings that arrived during the scenario (backlogs included). */
  readonly arrivals: ArrivalFigures | null
}

/**
 * CPU of one process over the steady phase.
 *
 * @example
 * const usage: ProcessCpu = { name: 'relay A', cpuMs: 190_000, percentOfCore: 31.6 }
 */
export interface ProcessCpu {
  readonly name: string
  readonly cpuMs: number
  readonly percentOfCore: number
  /** RSS when the steady phase ended. */
  readonly rssMb: number
}

/**
 * Every figure of a run.
 *
 * @example
 * const result: RelayBenchResult = JSON.parse(readFileSync('bench/results/relay-latest.json', 'utf8'))
 */
export interface RelayBenchResult {
  readonly startedAt: string
  readonly seconds: number
  readonly node: string
  readonly cpu: string
  readonly load: { readonly start: number; readonly end: number; readonly max: number }
  readonly layout: FleetLayout
  /** Where the relays stored their rooms (`--store`); absent in runs recorded before the flag, which used PGlite. */
  readonly store?: RelayStoreKind
  /**
   * A relay's RSS right after it initialized a new PGlite directory (null on PostgreSQL: nothing
   * to initialize), and A's and B's once started on their store.
   */
  readonly relayRssMb: { readonly afterInit: number | null; readonly atStart: { readonly A: number; readonly B: number } }
  readonly minutes: number
  readonly warmupSeconds: number
  readonly reconnectSpreadMs: number
  /** Mean bytes of one device update (one engine batch of readings), as Yjs encoded it. */
  readonly updateBytes: number
  readonly steady: {
    readonly seconds: number
    readonly updates: number
    readonly updatesOutB: number
    /**
     * Changes of relay A that relay B held over the phase (B and A on one PostgreSQL database):
     * dropped because A said its store wrote them (`tidemark_relay_relayed_confirmed_total`), or
     * written by B itself, A not having said so in time (`tidemark_relay_relayed_written_total`).
     * On PGlite B writes A's changes at once and both are 0. Absent in runs recorded before these
     * metrics.
     */
    readonly relayedB?: { readonly confirmed: number; readonly written: number }
    readonly arrivals: ArrivalFigures
    /** Arrivals the dashboards sampled against the updates they should have seen (devices × dashboards per fleet). */
    readonly expectedArrivals: number
    readonly cpu: readonly ProcessCpu[]
    /** The whole machine over the steady phase, in % of one core (/proc/stat): busy, busy outside this run, waiting on disk, stolen. */
    readonly machine: { readonly cores: number; readonly busyPercent: number; readonly othersPercent: number; readonly iowaitPercent: number; readonly stealPercent: number }
    /** CPU ms per 1,000 device updates. */
    readonly cpuPerThousand: { readonly A: number; readonly B: number; readonly total: number }
    /** The simulator's CPU against the relays' (A + B) and against every process of the run. */
    readonly simulatorShare: { readonly ofRelays: number; readonly ofAll: number }
    readonly sendLag: LatencySummary
    readonly minutes: readonly MinuteRow[]
    /** RSS every 10 s: [seconds since the steady phase began, MB A, MB B]. */
    readonly rssSeries: readonly (readonly [number, number, number])[]
    /** Least-squares slope of RSS over the steady phase, MB per minute. */
    readonly rssSlopeMbPerMinute: { readonly A: number; readonly B: number }
    /** The same over its second half: growth that levels off shows here as a smaller slope. */
    readonly rssSlopeSecondHalf: { readonly A: number; readonly B: number }
    /**
     * Least-squares slope of the memory outside the JS heap (RSS − V8 heap size, from the rows
     * a minute), MB per minute: what of the RSS slope is not the JS heap's. Absent in records
     * taken before the bench read the heap's size.
     */
    readonly outsideHeapSlope?: { readonly A: number; readonly B: number }
    /** Redis commands processed and bytes moved per device update over the steady phase. */
    readonly redis: { readonly commandsPerUpdate: number; readonly bytesInPerUpdate: number; readonly bytesOutPerUpdate: number }
  }
  readonly reconnects: readonly ReconnectRun[]
  readonly storage: {
    readonly rooms: number
    readonly storedMean: number
    readonly storedMax: number
    readonly snapshotMean: number
    readonly rowsMean: number
    readonly rawMean: number
    readonly updatesPerRoomMean: number
    /** Rooms still loaded on relay A when it stopped (after its devices left and the idle time passed). Sizes are of A's PGlite directory, or of the PostgreSQL database both relays wrote. */
    readonly roomsLoadedAtStop: number
  } | null
  readonly health: {
    readonly deviceRefusals: number
    readonly deviceErrors: number
    readonly deviceAnomalies: number
    readonly dashboardRefusals: number
    readonly dashboardErrors: number
    readonly dashboardEngineAnomalies: number
    readonly relayRefusals: Readonly<Record<string, number>>
    readonly relayUnhandledRejections: number
    readonly relayWarnings: Readonly<Record<string, readonly string[]>>
    readonly relayExits: Readonly<Record<string, string>>
  }
}

/**
 * Least-squares slope, MB per minute, of a relay's memory outside the JS heap (RSS − V8 heap
 * size) over the rows a minute; NaN when the rows lack the heap's size.
 *
 * @example
 * outsideHeapSlope(result.steady.minutes, 'B') // 0.3: B's growth outside the JS heap
 */
export function outsideHeapSlope(minutes: readonly MinuteRow[], relay: 'A' | 'B'): number {
  const points = minutes.flatMap((m): [number, number][] => (m.heapTotalMb === undefined ? [] : [[m.minute, m.rssMb[relay] - m.heapTotalMb[relay]]]))
  return Number(leastSquaresSlope(points).toFixed(2))
}
