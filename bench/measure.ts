/**
 * Timing: warm-up, interleaved rounds, median and spread.
 *
 * Contenders run in interleaved rounds (A B C, B C A, C A B, ...) rather than all runs of A then
 * all of B, so a slow drift of the machine (thermal, another process) lands on every contender
 * alike and the per-round ratios stay comparable.
 *
 * Every sample records wall time and the process's CPU time (user + system, all threads, so
 * V8's concurrent GC work counts). The benchmarks run on a shared 2-core machine where other
 * processes often take the CPU for whole seconds; CPU time does not count the time this process
 * sat descheduled, so the profiles use it for their headline figures and keep wall time beside it.
 */
import { pathToFileURL } from 'node:url'

/** Median and spread of a set of measurements. */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
  /**
   * Robust relative standard deviation: median absolute deviation × 1.4826 / median.
   * One outlier run does not move it, unlike (max − min) / median.
   */
  readonly relSpread: number
  readonly runs: readonly number[]
}

export function spreadOf(values: readonly number[]): Spread {
  if (values.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, relSpread: Number.NaN, runs: [] }
  const sorted = [...values].sort((a, b) => a - b)
  const median = medianOfSorted(sorted)
  const deviations = sorted.map((v) => Math.abs(v - median)).sort((a, b) => a - b)
  const mad = medianOfSorted(deviations)
  return {
    median,
    min: sorted[0] as number,
    max: sorted[sorted.length - 1] as number,
    relSpread: median === 0 ? 0 : (mad * 1.4826) / Math.abs(median),
    runs: values,
  }
}

function medianOfSorted(sorted: readonly number[]): number {
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

export interface TimedRun {
  readonly name: string
  readonly run: () => void
}

/** One timed sample, in ms per run. */
export interface Sample {
  readonly wallMs: number
  readonly cpuMs: number
}

/** Times one call: `sampleOnce` (the process's clocks) unless a test gives its own. */
export type Stopwatch = (fn: () => void) => Sample

/** CPU time every contender spends warming up, at the least, before it is timed (see `warmUp`). */
export const WARM_CPU_MS = 1_000

/** Most warm-up runs of one contender, however short its runs. */
const MAX_WARMUP_RUNS = 200

/**
 * Warms every contender up, interleaved, and returns how many repetitions fill one timed sample.
 *
 * Each contender runs at least `warmup` times and until its warm-up runs have taken `warmCpuMs`
 * of CPU time (at most 200 runs): timed rounds must find every contender at its steady speed.
 * A count alone does not: the engine's code takes V8 about 15 runs of streaming-100k (about
 * 300 ms) to reach it, its runs 3 to 15 taking 1.3–1.8 times its steady time, where a plain loop
 * is steady from its first repetitions.
 *
 * A contender much faster than `minSampleMs` (the plain-loop floor takes ~15 ms) is repeated
 * inside each timed sample, as many times as its last warm-up says it takes to fill
 * `minSampleMs`, and the sample is divided by the repetitions: a single short run is at the
 * mercy of one scavenge, one scheduler tick or the 1 ms-ish resolution of CPU time.
 * `settle` runs untimed before every run (see `settleHeap` in harness/memory.ts).
 */
export async function warmUp(
  contenders: readonly TimedRun[],
  warmup: number,
  progress: (line: string) => void = () => {},
  settle: () => Promise<void> = async () => {},
  minSampleMs = 150,
  warmCpuMs = WARM_CPU_MS,
  stopwatch: Stopwatch = sampleOnce,
): Promise<Map<string, number>> {
  const reps = new Map<string, number>(contenders.map((c) => [c.name, 1]))
  const spent = new Map<string, { runs: number; cpuMs: number; lastMs: number }>(contenders.map((c) => [c.name, { runs: 0, cpuMs: 0, lastMs: 0 }]))
  const warm = (name: string): boolean => {
    const s = spent.get(name) as { runs: number; cpuMs: number }
    return s.runs >= warmup && (s.cpuMs >= warmCpuMs || s.runs >= MAX_WARMUP_RUNS)
  }
  while (contenders.some((c) => !warm(c.name))) {
    for (const c of contenders) {
      if (warm(c.name)) continue
      await settle()
      const t = stopwatch(c.run)
      const s = spent.get(c.name) as { runs: number; cpuMs: number; lastMs: number }
      s.runs++
      s.cpuMs += t.cpuMs
      s.lastMs = t.cpuMs
      reps.set(c.name, Math.max(1, Math.min(50, Math.ceil(minSampleMs / Math.max(t.cpuMs, 0.01)))))
    }
  }
  for (const [name, s] of spent) progress(`warm-up ${name}: ${s.runs} runs, ${s.cpuMs.toFixed(0)} ms cpu, the last ${s.lastMs.toFixed(1)} ms`)
  return reps
}

/**
 * `rounds` interleaved rounds, rotating the order each round. Returns one sample per round per
 * contender (index i = round i), each divided by its repetitions.
 */
export async function timedRounds(
  contenders: readonly TimedRun[],
  rounds: number,
  reps: ReadonlyMap<string, number>,
  progress: (line: string) => void = () => {},
  settle: () => Promise<void> = async () => {},
  stopwatch: Stopwatch = sampleOnce,
): Promise<Map<string, Sample[]>> {
  const samples = new Map<string, Sample[]>(contenders.map((c) => [c.name, []]))
  for (let r = 0; r < rounds; r++) {
    const line: string[] = []
    for (let k = 0; k < contenders.length; k++) {
      const c = contenders[(r + k) % contenders.length] as TimedRun
      const n = reps.get(c.name) ?? 1
      await settle()
      const t = stopwatch(() => {
        for (let i = 0; i < n; i++) c.run()
      })
      const sample = { wallMs: t.wallMs / n, cpuMs: t.cpuMs / n }
      samples.get(c.name)?.push(sample)
      line.push(`${c.name} ${sample.cpuMs.toFixed(1)} ms cpu (wall ${sample.wallMs.toFixed(1)})${n > 1 ? ` ×${n}` : ''}`)
    }
    progress(`round ${r + 1}/${rounds}: ${line.join(', ')}`)
  }
  return samples
}

/** Wall and CPU time of one call, in ms. */
export function sampleOnce(fn: () => void): Sample {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  fn()
  const wallMs = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000 }
}

export function perSecond(count: number, ms: number): number {
  return Math.round((count / ms) * 1000)
}

/** True when the module is the script node was started with. */
export function isMain(url: string): boolean {
  const entry = process.argv[1]
  return entry !== undefined && url === pathToFileURL(entry).href
}
