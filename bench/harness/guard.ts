/**
 * The perf guard's rules (`pnpm bench:check`, bench/check.ts): what it measures, its tolerance,
 * when it confirms a low result in a fresh process, and its verdict. The processes it measures in
 * are given to it, so the rules are tested without running one.
 */
import { cpus, loadavg } from 'node:os'
import { spreadOf } from '../measure.ts'
import type { ChildRun } from './child.ts'

/** The guard's profile, and the arguments it runs it with: Tidemark and the floor, 12 rounds. */
export const GUARD_PROFILE = 'streaming-150k-watermark-lag'
export const GUARD_ARGS: readonly string[] = ['--only=tidemark,plain-loop', '--no-memory', '--rounds=12', '--warmup=2']
const RATIO = 'engine/floor'

/** Tidemark's wall time over its CPU time above which other processes took the cores. */
export const CONTENDED = 1.25

export interface GuardSample {
  /** Median over rounds of floor CPU time / engine CPU time. */
  readonly ratio: number
  /** Tidemark's median wall time over its median CPU time: above 1.25, other processes took the cores. */
  readonly contention: number
  /** Robust relative spread of the per-round ratios. */
  readonly relSpread: number
  readonly rounds: number
}

export interface GuardBaseline extends GuardSample {
  readonly profile: string
  readonly metric: string
  /** Relative spread of the median ratio between processes (half-range over the median). */
  readonly betweenProcesses: number
  readonly processes: number
  readonly date: string
  readonly node: string
  readonly cpu: string
  /** Tidemark's wall time over CPU time, worst of the processes (1 or below: nothing else competed). */
  readonly contention: number
  /** 1-minute load average when the baseline was written (context only: it lags by about a minute). */
  readonly load: number
}

/** Measures the guard once in a fresh process; `label` names it in the progress lines. */
export type GuardMeasure = (label: string) => Promise<GuardSample>

/** The guard's sample from a finished profile process (see `runProfileProcess`). */
export function guardSample(child: ChildRun): GuardSample {
  const ratio = child.figures?.ratios.find((r) => r.name === RATIO)
  const engine = child.figures?.contenders.find((c) => c.name === 'tidemark')
  if (child.figures === null || ratio === undefined || engine === undefined) {
    throw new Error(`${GUARD_PROFILE} failed (exit ${child.code}):\n${child.tail}`)
  }
  return {
    ratio: ratio.median,
    relSpread: ratio.relSpread,
    rounds: ratio.perRound.length,
    contention: engine.wallMs.median / engine.timeMs.median,
  }
}

/** Relative standard error of a median of `rounds` samples with relative spread `relSpread`. */
function standardError(s: GuardSample): number {
  return (1.2533 * s.relSpread) / Math.sqrt(Math.max(1, s.rounds))
}

/** 3 × the combined standard error of both medians and the baseline's between-process spread, kept within 5–35%. */
export function guardTolerance(baseline: GuardBaseline, current: GuardSample): number {
  const combined = Math.sqrt(standardError(baseline) ** 2 + standardError(current) ** 2 + baseline.betweenProcesses ** 2)
  return Math.min(0.35, Math.max(0.05, 3 * combined))
}

function pct(x: number): string {
  return `${(x * 100).toFixed(1)}%`
}

export interface GuardVerdict {
  readonly verdict: 'OK' | 'INCONCLUSIVE' | 'REGRESSION'
  /** 1 on a regression, else 0. */
  readonly exitCode: 0 | 1
}

/**
 * Measures once and compares with the baseline. A result below tolerance on a quiet machine is
 * measured once more in a fresh process (the better of the two counts); on a contended one it is
 * INCONCLUSIVE (exit 0) unless `strict`. `say` prints a line; the last one states the ratio.
 */
export async function checkGuard(baseline: GuardBaseline, measure: GuardMeasure, strict: boolean, say: (line: string) => void): Promise<GuardVerdict> {
  let current = await measure('check')
  let tol = guardTolerance(baseline, current)
  let floor = baseline.ratio * (1 - tol)
  if (current.ratio < floor && current.contention <= CONTENDED) {
    say(`bench:check: ratio ${current.ratio.toFixed(4)} below ${floor.toFixed(4)}; confirming in a fresh process`)
    const second = await measure('confirm')
    if (second.ratio > current.ratio) current = second
    tol = guardTolerance(baseline, current)
    floor = baseline.ratio * (1 - tol)
  }
  const change = current.ratio / baseline.ratio - 1
  const contended = current.contention > CONTENDED
  const verdict = current.ratio >= floor ? 'OK' : contended && !strict ? 'INCONCLUSIVE' : 'REGRESSION'
  if (verdict === 'INCONCLUSIVE') {
    say(`bench:check: wall time was ${current.contention.toFixed(2)}× CPU time: other processes took the cores; rerun on a quiet machine or pass --strict`)
  }
  if (verdict === 'OK' && change > tol) {
    say(`bench:check: ${pct(change)} above the baseline; consider pnpm bench:check --update after review`)
  }
  say(
    `bench:check ${verdict}: ${GUARD_PROFILE} engine/floor ratio ${current.ratio.toFixed(4)} (${pct(current.ratio)} of the plain-loop floor, ±${pct(current.relSpread)} over ${current.rounds} rounds) vs baseline ${baseline.ratio.toFixed(4)}: ${change >= 0 ? '+' : ''}${pct(change)}, tolerance −${pct(tol)}`,
  )
  return { verdict, exitCode: verdict === 'REGRESSION' ? 1 : 0 }
}

/** A new baseline: the guard measured in 3 fresh processes, the median of their ratios and the spread between them. */
export async function measureBaseline(measure: GuardMeasure): Promise<GuardBaseline> {
  const samples: GuardSample[] = []
  for (let i = 0; i < 3; i++) samples.push(await measure(`baseline ${i + 1}/3`))
  const medians = spreadOf(samples.map((s) => s.ratio))
  return {
    profile: GUARD_PROFILE,
    metric: 'Tidemark window-engine throughput / plain-loop floor throughput, same events, same process',
    ratio: Number(medians.median.toFixed(4)),
    relSpread: Number(spreadOf(samples.map((s) => s.relSpread)).median.toFixed(4)),
    rounds: samples[0]?.rounds ?? 0,
    contention: Number(Math.max(...samples.map((x) => x.contention)).toFixed(2)),
    betweenProcesses: Number(((medians.max - medians.min) / 2 / medians.median).toFixed(4)),
    processes: samples.length,
    date: new Date().toISOString(),
    node: process.version,
    cpu: `${cpus()[0]?.model.trim() ?? 'unknown cpu'} × ${cpus().length}`,
    load: Number((loadavg()[0] as number).toFixed(2)),
  }
}
