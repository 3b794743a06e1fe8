/**
 * Command-line flags of `pnpm bench:relay`.
 */
import { join } from 'node:path'
import type { FleetLayout } from './fleetLayout.ts'

/**
 * Where the relays of a run store their rooms: `pglite`, a PGlite data directory of its own each
 * (each relay writes every change it receives, its own and those relayed through Redis);
 * `postgres`, one PostgreSQL server started for the run whose database both relays use through
 * `DATABASE_URL`, the scale-out the relay's README recommends (a relay drops the changes the
 * other relay said its store wrote).
 *
 * @example
 * const store: RelayStoreKind = parseBenchFlags(['--store=postgres']).store // 'postgres'
 */
export type RelayStoreKind = 'pglite' | 'postgres'

const STORE_KINDS: readonly RelayStoreKind[] = ['pglite', 'postgres']

/**
 * What a relay's store is called in the benchmark's output.
 *
 * @example
 * `a new A on the same port and ${STORE_NAMES.postgres}` // '… and PostgreSQL database'
 */
export const STORE_NAMES: Readonly<Record<RelayStoreKind, string>> = { pglite: 'PGlite directory', postgres: 'PostgreSQL database' }

/**
 * What one run measures.
 *
 * @example
 * const flags: BenchFlags = parseBenchFlags(['--minutes=1'])
 */
export interface BenchFlags {
  readonly layout: FleetLayout
  /** Length of the steady phase (latency, CPU, RSS), in minutes; fractions allowed. */
  readonly minutes: number
  /**
   * Seconds of steady traffic before measuring, once every dashboard sees every device. The
   * default fills the devices' live state first: a device's document holds a window's cells
   * until its end + allowed lateness + retention (12 min with the fleet's options), so memory
   * grows with the data for that long; measured from then on, a growing RSS is a leak.
   */
  readonly warmupSeconds: number
  /** Spread of the devices' reconnects after a disruption, and of their first connect (ms). */
  readonly reconnectSpreadMs: number
  /** Run the reconnect phases (all device sockets dropped; relay A restarted). */
  readonly reconnect: boolean
  /** Path prefix of the `.md` and `.json` results, or null to write none. */
  readonly out: string | null
  /** Where the relays store their rooms (`--store`, default `pglite`). */
  readonly store: RelayStoreKind
  /** Write CPU profiles of each relay, the simulator and the dashboards to bench/results/relay-profiles/<process>/ (one per thread). */
  readonly cpuProf: boolean
}

/**
 * Seconds until the devices' live state is full: a window's end + allowed lateness + retention
 * (60 + 600 + 60 s) is 12 min; a device's document measured in a one-device run stops growing
 * at 15 min (the last retired cells leave at the next write after their windows expire).
 */
export const LIVE_STATE_FILL_SECONDS = 900

const USAGE = `usage: pnpm bench:relay [--minutes=10] [--warmup=900] [--fleets=10] [--devices=100] [--dashboards=2] [--rate=1] [--spread=5000] [--no-reconnect] [--out=bench/results/relay-latest | --no-write] [--store=pglite|postgres] [--cpu-prof]`

/**
 * Reads the flags; throws with the usage line on an unknown or malformed one.
 *
 * @example
 * parseBenchFlags(['--minutes=0.5', '--no-write']).minutes // 0.5
 */
export function parseBenchFlags(argv: readonly string[]): BenchFlags {
  const values = new Map<string, string>()
  for (const arg of argv) {
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg)
    if (match === null) throw new Error(`unexpected argument ${arg}\n${USAGE}`)
    values.set(match[1] as string, match[2] ?? 'true')
  }
  const known = ['minutes', 'warmup', 'fleets', 'devices', 'dashboards', 'rate', 'spread', 'no-reconnect', 'out', 'no-write', 'store', 'cpu-prof']
  for (const name of values.keys()) if (!known.includes(name)) throw new Error(`unknown flag --${name}\n${USAGE}`)
  const number = (name: string, fallback: number, integer: boolean, min: number): number => {
    const text = values.get(name)
    if (text === undefined) return fallback
    const value = Number(text)
    if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
      throw new Error(`--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got ${text}\n${USAGE}`)
    }
    return value
  }
  const out = values.get('out')
  if (out === 'true' || out === '') throw new Error(`--out takes the path prefix of the results, e.g. --out=bench/results/relay-latest\n${USAGE}`)
  const storeText = values.get('store') ?? 'pglite'
  const store = STORE_KINDS.find((kind) => kind === storeText)
  if (store === undefined) throw new Error(`--store must be one of ${STORE_KINDS.join(', ')}, got ${storeText}\n${USAGE}`)
  return {
    layout: {
      fleets: number('fleets', 10, true, 1),
      devicesPerFleet: number('devices', 100, true, 1),
      dashboardsPerFleet: number('dashboards', 2, true, 1),
      updatesPerSecond: number('rate', 1, false, 0.01),
    },
    minutes: number('minutes', 10, false, 0.1),
    warmupSeconds: number('warmup', LIVE_STATE_FILL_SECONDS, false, 0),
    reconnectSpreadMs: number('spread', 5000, true, 1),
    reconnect: !values.has('no-reconnect'),
    out: values.has('no-write') ? null : (out ?? 'bench/results/relay-latest'),
    store,
    cpuProf: values.has('cpu-prof'),
  }
}

/**
 * Node flags of the benchmark's process `name` (`A`, `B`, `simulator`, `dashboards`…): with
 * `--cpu-prof`, a CPU profile per thread in `<resultsDir>/relay-profiles/<name>/`; else none.
 *
 * @example
 * profileFlags(parseBenchFlags(['--cpu-prof']), 'A', 'bench/results') // ['--cpu-prof', '--cpu-prof-dir=bench/results/relay-profiles/A']
 */
export function profileFlags(flags: BenchFlags, name: string, resultsDir: string): string[] {
  return flags.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(resultsDir, 'relay-profiles', name)}`] : []
}
