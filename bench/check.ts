/**
 * The perf guard: Tidemark's window engine on streaming-150k-watermark-lag, as a share of the
 * plain-loop floor's throughput over the same events in the same process, compared with the
 * committed baseline ratio in bench/baseline.json. A ratio, not a time, so a slower or busier
 * machine moves both sides alike.
 *
 * Tolerance comes from measured spread: the standard error of the baseline's and this run's
 * median ratios (from the spread of their per-round ratios) plus the spread between processes
 * recorded with the baseline, times 3, kept within 5–35%. A run below the tolerance on a quiet
 * machine is measured once more in a fresh process and fails only if that one is below too. The last line states the
 * ratio; the exit code is 1 on regression.
 *
 * The ratio is not immune to a busy machine: other processes on the same two cores evict caches
 * and share execution units, and the engine (pointer-heavy, larger working set) can slow more
 * than the tight floor loop. Contention is read from the run itself: when Tidemark's wall time
 * exceeds its CPU time by more than 25% the process sat descheduled, so other processes were
 * competing for the cores. Then a result below tolerance is reported as INCONCLUSIVE (exit 0)
 * rather than a regression, and no confirmation run is spent on it; `--strict` fails it anyway.
 *
 *   pnpm bench:check             compare with bench/baseline.json
 *   pnpm bench:check --update    measure in 3 processes and write bench/baseline.json
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BENCH_DIR, runProfileProcess } from './harness/child.ts'
import { CONTENDED, checkGuard, GUARD_ARGS, GUARD_PROFILE, type GuardBaseline, guardSample, measureBaseline } from './harness/guard.ts'

const BASELINE_FILE = join(BENCH_DIR, 'baseline.json')

async function measure(label: string) {
  return guardSample(await runProfileProcess(GUARD_PROFILE, GUARD_ARGS, (line) => process.stdout.write(`[${label}] ${line.trim()}\n`)))
}

function pct(x: number): string {
  return `${(x * 100).toFixed(1)}%`
}

async function update(): Promise<void> {
  const baseline = await measureBaseline(measure)
  if (baseline.contention > CONTENDED) {
    process.stdout.write(`bench:check: warning: wall time was ${baseline.contention}× CPU time (other processes competing); a baseline from a busy machine is low\n`)
  }
  writeFileSync(BASELINE_FILE, `${JSON.stringify(baseline, null, 2)}\n`)
  process.stdout.write(
    `bench:check baseline written: engine/floor ratio ${baseline.ratio} (${pct(baseline.ratio)} of the floor), per-round spread ±${pct(baseline.relSpread)}, between processes ±${pct(baseline.betweenProcesses)}\n`,
  )
}

async function check(): Promise<void> {
  if (!existsSync(BASELINE_FILE)) throw new Error(`no ${BASELINE_FILE}; create it with pnpm bench:check --update`)
  const baseline = JSON.parse(readFileSync(BASELINE_FILE, 'utf8')) as GuardBaseline
  const { exitCode } = await checkGuard(baseline, measure, process.argv.includes('--strict'), (line) => process.stdout.write(`${line}\n`))
  process.exitCode = exitCode
}

await (process.argv.includes('--update') ? update() : check())
