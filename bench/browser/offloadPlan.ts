/**
 * What a worker-offload run (bench/browser/worker-offload.ts) measures: its scenarios, the fleets
 * of the devices scenario, the sizes of the 10^6-event run and the takeover trials, and the
 * command line that picks among them.
 */

export type Scenario = 'devices' | 'million' | 'memory' | 'takeover'

export const SCENARIOS: readonly Scenario[] = ['devices', 'million', 'memory', 'takeover']

/**
 * Fleets of the devices scenario. 20 readings per device per second is the fleet the targets are
 * set for; 100 shows how the difference grows with the load; 0 is the floor of the dashboard
 * itself (frames, React, paint) with no reading arriving.
 */
export const DEVICE_LOADS: readonly { readonly devices: number; readonly rate: number }[] = [
  { devices: 200, rate: 0 },
  { devices: 48, rate: 20 },
  { devices: 200, rate: 20 },
  { devices: 200, rate: 100 },
]

/** The 10^6-event run: events ingested by the page, in batches of this many. */
export const MILLION = { events: 1_000_000, batch: 10_000 } as const

/** Takeover trials: the leader closed, and frozen (as many with the `freeze` event as without it). */
export const TAKEOVER_TRIALS = { closed: 5, frozen: 3 } as const

/**
 * The control's time per batch: the host's measured time for the 10^6 events (`workerRunMs`)
 * spread over its batches, at least 1 ms.
 *
 * @example
 * controlSpinMs(4_790) // 48
 */
export function controlSpinMs(workerRunMs: number): number {
  return Math.max(1, Math.round(workerRunMs / Math.ceil(MILLION.events / MILLION.batch)))
}

export interface OffloadArgs {
  /** The scenarios to run, in their order. */
  readonly only: readonly Scenario[]
  /** Seconds of the devices scenario's load (default 10). */
  readonly seconds: number
  readonly json: boolean
  /** Every scenario at its default length: the run is the record written to bench/results. */
  readonly full: boolean
}

/**
 * `worker-offload.ts [--seconds=10] [--only=devices,million,memory,takeover] [--json]`; throws on
 * an unknown scenario or a length that is not a positive number.
 *
 * @example
 * parseOffloadArgs(['--only=million']).full // false
 */
export function parseOffloadArgs(argv: readonly string[]): OffloadArgs {
  const arg = (name: string): string | undefined => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
  const onlyArg = arg('only')
  const only = onlyArg?.split(',')
  const unknown = only?.filter((s) => !SCENARIOS.includes(s as Scenario)) ?? []
  if (unknown.length > 0) throw new Error(`--only takes ${SCENARIOS.join(', ')} (comma-separated), not ${unknown.join(', ')}`)
  const secondsArg = arg('seconds')
  const seconds = secondsArg === undefined ? 10 : Number(secondsArg)
  if (!(Number.isFinite(seconds) && seconds > 0)) throw new Error(`--seconds must be a number > 0, got ${secondsArg}`)
  return {
    only: only === undefined ? SCENARIOS : SCENARIOS.filter((s) => only.includes(s)),
    seconds,
    json: argv.includes('--json'),
    full: onlyArg === undefined && secondsArg === undefined,
  }
}
