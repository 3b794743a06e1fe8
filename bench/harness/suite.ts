/**
 * The Node profiles `pnpm bench` runs, which of them a command line selects, and the figures the
 * report is written from: this run's, and the previous run's for the profiles not run this time.
 */
import { type ProfileFigures, parseProfileArgs } from './profile.ts'
import type { MissingProfile } from './report.ts'

export interface SuiteProfile {
  readonly name: string
  readonly streaming: boolean
}

/** Every Node profile, in run order. */
export const SUITE_PROFILES: readonly SuiteProfile[] = [
  { name: 'streaming-100k', streaming: true },
  { name: 'streaming-150k-watermark-lag', streaming: true },
  { name: 'streaming-250k-watermark-lag', streaming: true },
  { name: 'correction-churn', streaming: false },
  { name: 'reconnect-burst', streaming: false },
  { name: 'many-sources', streaming: false },
  { name: 'anomaly-heavy', streaming: false },
  { name: 'sliding-1h-1m', streaming: true },
  { name: 'sessions-100k', streaming: true },
  { name: 'ordered-stream-flush', streaming: false },
  { name: 'merge-8-replicas', streaming: false },
  { name: 'reload-100k', streaming: false },
  { name: 'aggregates-accuracy', streaming: false },
  { name: 'aggregates-cost', streaming: false },
]

/** Profiles the benchmark plan names that this command does not run; listed, never given numbers. */
export const SEPARATE_PROFILES: readonly MissingProfile[] = [
  { name: 'wal-append', where: 'browser', status: 'separate: `pnpm bench:browser:wal` (bench/browser/wal-append.ts); not part of `pnpm bench`' },
  { name: 'wal-recovery-1m', where: 'browser', status: 'separate: `pnpm bench:browser:wal` (bench/browser/wal-recovery-1m.ts); not part of `pnpm bench`' },
  { name: 'render-1000-windows', where: 'browser', status: 'separate: `pnpm bench:browser`; not part of `pnpm bench`' },
]

export interface SuiteArgs {
  /** The profiles to run, in run order (none with `--report-only`). */
  readonly selected: readonly SuiteProfile[]
  /** Arguments every profile process is given: `--rounds=`, `--warmup=`, `--no-memory`. */
  readonly passThrough: readonly string[]
  /** Processes per profile, one after another, their rounds pooled (`--processes=N`, default 1). */
  readonly processes: number
  readonly reportOnly: boolean
}

/**
 * `pnpm bench [--stream] [--only=a,b] [--rounds=N] [--warmup=N] [--no-memory] [--processes=N] [--report-only]`.
 *
 * @example
 * parseSuiteArgs(['--only=correction-churn', '--rounds=9']).selected // [correction-churn]
 */
export function parseSuiteArgs(argv: readonly string[], profiles: readonly SuiteProfile[] = SUITE_PROFILES): SuiteArgs {
  const onlyArg = argv.find((a) => a.startsWith('--only='))
  const only = onlyArg === undefined ? null : onlyArg.slice('--only='.length).split(',')
  if (only !== null) {
    for (const name of only) if (!profiles.some((p) => p.name === name)) throw new Error(`unknown profile ${name}; known: ${profiles.map((p) => p.name).join(', ')}`)
  }
  const processesArg = argv.find((a) => a.startsWith('--processes='))
  const processes = processesArg === undefined ? 1 : Number(processesArg.slice('--processes='.length))
  if (!Number.isInteger(processes) || processes < 1) throw new Error(`--processes must be a whole number >= 1, got ${processesArg}`)
  const reportOnly = argv.includes('--report-only')
  const streamOnly = argv.includes('--stream')
  const passThrough = argv.filter((a) => a.startsWith('--rounds=') || a.startsWith('--warmup=') || a === '--no-memory')
  // Read here as each profile reads them, so a bad value stops the suite before any process starts.
  parseProfileArgs(passThrough)
  return {
    selected: reportOnly ? [] : profiles.filter((p) => (only === null ? !streamOnly || p.streaming : only.includes(p.name))),
    passThrough,
    processes,
    reportOnly,
  }
}

/** The figures to report, in run order: this run's where a profile ran, else the previous run's. */
export function reportedFigures(
  fresh: readonly ProfileFigures[],
  previous: readonly ProfileFigures[],
  profiles: readonly SuiteProfile[] = SUITE_PROFILES,
): ProfileFigures[] {
  return profiles.flatMap((p) => {
    const figures = fresh.find((f) => f.profile === p.name) ?? previous.find((f) => f.profile === p.name)
    return figures === undefined ? [] : [figures]
  })
}
