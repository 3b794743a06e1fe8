/**
 * Runs one benchmark profile: a memory-and-verification run per contender, then warm-up and
 * interleaved timed rounds, then ratios. Each profile file defines its workload and contenders
 * and hands them to `runProfileCli`; run-all starts each profile in its own process so the heap
 * figures of one profile never include another's garbage.
 *
 *   node --expose-gc --import tsx --conditions=@tidemark/source bench/<profile>.ts [--json]
 *     [--only=tidemark,plain-loop] [--rounds=N] [--warmup=N] [--no-memory] [--forced-gc]
 */
import type { Contender, Outcome, WindowTotals } from './contender.ts'
import { perSecond, type Sample, type Spread, type Stopwatch, sampleOnce, spreadOf, timedRounds, WARM_CPU_MS, warmUp } from '../measure.ts'
import { type MemoryFigures, measureMemory, mb, NO_PROBE, retainedBy, settleHeap } from './memory.ts'

/** `time(reference) / time(subject)`: the subject's throughput relative to the reference's. */
export interface RatioDefinition {
  readonly name: string
  readonly label: string
  readonly subject: string
  readonly reference: string
  /** Shown as a percentage of the reference (floors) or as "× faster" (peers). */
  readonly format: 'percent' | 'times'
  /** The issue's target, when it sets one. */
  readonly target?: number
}

export interface ProfileDefinition {
  readonly name: string
  readonly description: string
  readonly events: number
  readonly batches: number
  readonly contenders: readonly Contender[]
  readonly ratios: readonly RatioDefinition[]
  /** Pairs of contenders whose recorded outputs must agree (window totals or emission checksums). */
  readonly agree?: readonly (readonly [string, string])[]
  readonly rounds?: number
  readonly warmup?: number
  /** List each contender's median CPU time in the report (profiles whose target is absolute, in ms). */
  readonly showTimes?: boolean
  /** End gauges (of any contender) to list in the report, e.g. `bytesPerCell`. */
  readonly showGauges?: readonly string[]
  /**
   * An absolute target on one contender's median elapsed (wall) time, marked ✓/✗ in the report:
   * how long the work blocks the thread. Elapsed time overstates it on a loaded machine.
   */
  readonly timeTarget?: TimeTarget
}

export interface TimeTarget {
  readonly contender: string
  readonly maxMs: number
}

export interface ContenderFigures {
  readonly name: string
  readonly label: string
  /** CPU time of the process per run (the headline; see measure.ts). */
  readonly timeMs: Spread
  /** Wall time per run, for reference: includes time the process sat descheduled. */
  readonly wallMs: Spread
  /** Events per CPU-second. */
  readonly eventsPerSec: number
  readonly memory: (MemoryFigures & { liveModelMB?: number }) | null
  readonly end: Readonly<Record<string, number>>
  readonly counts: Readonly<Record<string, number>>
}

export interface RatioFigures extends RatioDefinition {
  readonly median: number
  readonly min: number
  readonly max: number
  /** Robust relative spread of the per-round ratios (see `spreadOf`). */
  readonly relSpread: number
  readonly perRound: readonly number[]
  readonly meetsTarget: boolean | null
}

export interface Agreement {
  readonly pair: readonly [string, string]
  readonly compared: number
  readonly mismatches: readonly string[]
}

export interface ProfileFigures {
  readonly profile: string
  /** Processes whose rounds these figures pool (`pnpm bench -- --processes=N`); one when absent. */
  readonly processes?: number
  readonly description: string
  readonly events: number
  readonly batches: number
  readonly date: string
  readonly node: string
  readonly rounds: number
  readonly warmup: number
  readonly contenders: readonly ContenderFigures[]
  readonly ratios: readonly RatioFigures[]
  readonly agreement: readonly Agreement[]
  readonly showTimes?: boolean
  readonly showGauges?: readonly string[]
  readonly timeTarget?: TimeTarget
  /** Whole benchmark process: peak RSS (getrusage) and wall time, workload generation included. */
  readonly process: { readonly maxRssMB: number; readonly wallMs: number; readonly prepareMs: number }
  /** A profile that measures no ratio (accuracy, sizes): its one-line summary, for progress and the report. */
  readonly headline?: string
  /** Markdown lines the report prints in the profile's own section (tables). */
  readonly tables?: readonly string[]
}

export interface ProfileOptions {
  readonly only: readonly string[] | null
  readonly rounds: number | null
  readonly warmup: number | null
  readonly memory: boolean
  /** Force a GC before every timed run; off by default (see `runProfile`). */
  readonly settleGc: boolean
  readonly progress: (line: string) => void
  /** Times every run (default `sampleOnce`: the process's CPU and wall clocks). */
  readonly stopwatch?: Stopwatch
}

export async function runProfile(definition: ProfileDefinition, options: ProfileOptions, prepareMs = 0): Promise<ProfileFigures> {
  const started = performance.now()
  const say = options.progress
  const stopwatch = options.stopwatch ?? sampleOnce
  const contenders = definition.contenders.filter((c) => options.only === null || options.only.includes(c.name))
  const rounds = options.rounds ?? definition.rounds ?? 5
  const warmup = options.warmup ?? definition.warmup ?? 2
  const outcomes = new Map<string, Outcome>()
  const memory = new Map<string, MemoryFigures & { liveModelMB?: number }>()
  const singleTimes = new Map<string, Sample[]>()

  const regular = contenders
    .filter((c) => c.rounds === undefined)
    .map((c) => ({ name: c.name, run: () => c.run({ probe: NO_PROBE, record: false }).close?.() }))
  // No forced GC between timed runs unless asked: a full GC collects the previous run's engine, and
  // V8 then discards every optimized function that embedded one of its objects ("deoptimize: weak
  // objects"), so each run would start cold. Measured on streaming-100k: 223–280 ms per Tidemark
  // run with a forced GC before each, 50–113 ms without. A long-lived engine never pays that.
  const settle = options.settleGc ? settleHeap : async () => {}

  // Memory runs come first: their forced GCs would otherwise throw away the warm-up's optimized code.
  for (const c of contenders) {
    if (!options.memory && c.rounds === undefined && !needsRecord(definition, contenders, c.name)) continue
    // One unobserved run first, so bytecode, feedback and code are not counted as retained state.
    if (c.rounds === undefined) c.run({ probe: NO_PROBE, record: true }).close?.()
    let sample: Sample = { wallMs: 0, cpuMs: 0 }
    const { memory: figures, state: outcome } = await measureMemory(definition.batches, (probe) => {
      let o: Outcome | undefined
      sample = stopwatch(() => {
        o = c.run({ probe, record: true })
      })
      return o as Outcome
    })
    let liveModelMB: number | undefined
    if (outcome.liveModel !== undefined) liveModelMB = mb(retainedBy(outcome.liveModel).bytes)
    outcome.close?.()
    // Keep what the agreement check needs, not the run's state: later contenders' heap figures must not carry it.
    outcomes.set(c.name, recordOf(outcome))
    if (options.memory) memory.set(c.name, liveModelMB === undefined ? figures : { ...figures, liveModelMB })
    if (c.rounds !== undefined) singleTimes.set(c.name, [sample])
    say(
      `${c.name}: recorded run ${sample.cpuMs.toFixed(0)} ms cpu, heap peak ${figures.heapPeakMB} MB, retained ${figures.retainedMB} MB` +
        (liveModelMB === undefined ? '' : ` (live window model ${liveModelMB} MB)`) +
        `, ${figures.gcCount} GCs ${figures.gcPauseMs} ms`,
    )
  }

  // Before any timed run: contenders that disagree make every figure meaningless.
  const agreement = checkAgreement(definition, outcomes)
  for (const a of agreement) {
    if (a.mismatches.length > 0) {
      throw new Error(`${definition.name}: ${a.pair.join(' and ')} disagree on ${a.mismatches.length} of ${a.compared}: ${a.mismatches.slice(0, 5).join('; ')}`)
    }
  }

  const reps = await warmUp(regular, warmup, say, settle, undefined, undefined, stopwatch)

  const times = await timedRounds(regular, rounds, reps, say, settle, stopwatch)
  for (const c of contenders) {
    if (c.rounds === undefined) continue
    const runs = singleTimes.get(c.name) ?? []
    for (let r = runs.length; r < c.rounds; r++) {
      await settle()
      const sample = stopwatch(() => c.run({ probe: NO_PROBE, record: false }).close?.())
      runs.push(sample)
      say(`${c.name} run ${r + 1}/${c.rounds} ${sample.cpuMs.toFixed(0)} ms cpu`)
    }
    times.set(c.name, runs)
  }

  const cpu = (name: string) => (times.get(name) ?? []).map((t) => t.cpuMs)
  const figures: ContenderFigures[] = contenders.map((c) => {
    const spread = spreadOf(cpu(c.name))
    const wall = spreadOf((times.get(c.name) ?? []).map((t) => t.wallMs))
    const outcome = outcomes.get(c.name)
    return {
      name: c.name,
      label: c.label,
      timeMs: roundSpread(spread),
      wallMs: roundSpread(wall),
      eventsPerSec: perSecond(definition.events, spread.median),
      memory: memory.get(c.name) ?? null,
      end: outcome?.end ?? {},
      counts: outcome?.counts ?? {},
    }
  })
  const ratios = definition.ratios
    .filter((r) => times.has(r.subject) && times.has(r.reference))
    .map((r) => ratioFigures(r, cpu(r.subject), cpu(r.reference)))
  return {
    profile: definition.name,
    description: definition.description,
    events: definition.events,
    batches: definition.batches,
    date: new Date().toISOString(),
    node: process.version,
    rounds,
    warmup,
    contenders: figures,
    ratios,
    agreement,
    ...(definition.showTimes === undefined ? {} : { showTimes: definition.showTimes }),
    ...(definition.showGauges === undefined ? {} : { showGauges: definition.showGauges }),
    ...(definition.timeTarget === undefined ? {} : { timeTarget: definition.timeTarget }),
    process: {
      maxRssMB: Number((process.resourceUsage().maxRSS / 1024).toFixed(1)),
      wallMs: Math.round(performance.now() - started + prepareMs),
      prepareMs: Math.round(prepareMs),
    },
  }
}

function recordOf(o: Outcome): Outcome {
  const record: { -readonly [K in keyof Outcome]: Outcome[K] } = { end: o.end, counts: o.counts }
  if (o.totals !== undefined) record.totals = o.totals
  if (o.watermark !== undefined) record.watermark = o.watermark
  if (o.checksum !== undefined) record.checksum = o.checksum
  return record
}

/** True when `name` is half of an agreement pair whose other half also runs. */
function needsRecord(definition: ProfileDefinition, running: readonly Contender[], name: string): boolean {
  const runs = (n: string) => running.some((c) => c.name === n)
  return (definition.agree ?? []).some(([a, b]) => (a === name && runs(b)) || (b === name && runs(a)))
}

/**
 * One profile's figures from several processes, pooled as one run of all their rounds: each
 * contender's times, and each ratio from them (rounds pair up within each process). A process
 * compiles the engine its own way, which moves a ratio by up to ±15% from one process to the
 * next on a 2-core machine; pooling rounds of several keeps one process's luck out of the
 * median. Memory, gauges and agreement are the first process's (each process checks agreement).
 *
 * @example
 * const pooled = poolProcesses([first.figures, second.figures, third.figures])
 * pooled.ratios[0].median // over every round of the three
 */
export function poolProcesses(runs: readonly ProfileFigures[]): ProfileFigures {
  const first = runs[0]
  if (first === undefined) throw new Error('poolProcesses needs the figures of at least one process')
  if (runs.length === 1) return first
  const timesOf = (name: string, pick: (c: ContenderFigures) => Spread) =>
    runs.flatMap((run) => {
      const c = run.contenders.find((x) => x.name === name)
      return c === undefined ? [] : pick(c).runs
    })
  const contenders = first.contenders.map((c): ContenderFigures => {
    const spread = spreadOf(timesOf(c.name, (x) => x.timeMs))
    return { ...c, timeMs: roundSpread(spread), wallMs: roundSpread(spreadOf(timesOf(c.name, (x) => x.wallMs))), eventsPerSec: perSecond(first.events, spread.median) }
  })
  // A ratio's figures are made again from the pooled times: every measured field is overwritten.
  const ratios = first.ratios.map((r) => ratioFigures(r, timesOf(r.subject, (x) => x.timeMs), timesOf(r.reference, (x) => x.timeMs)))
  return {
    ...first,
    processes: runs.length,
    rounds: runs.reduce((n, run) => n + run.rounds, 0),
    contenders,
    ratios,
    process: {
      maxRssMB: Math.max(...runs.map((run) => run.process.maxRssMB)),
      wallMs: runs.reduce((n, run) => n + run.process.wallMs, 0),
      prepareMs: runs.reduce((n, run) => n + run.process.prepareMs, 0),
    },
  }
}

function ratioFigures(r: RatioDefinition, subject: readonly number[], reference: readonly number[]): RatioFigures {
  // Interleaved rounds pair up index by index; a contender timed on its own is set against the median.
  const paired = subject.length === reference.length && subject.length > 1
  const perRound = paired
    ? subject.map((s, i) => (reference[i] as number) / s)
    : subject.map((s) => spreadOf(reference).median / s)
  const spread = spreadOf(perRound)
  const median = spreadOf(reference).median / spreadOf(subject).median
  return {
    ...r,
    median: round(median, 4),
    min: round(spread.min, 4),
    max: round(spread.max, 4),
    relSpread: round(spread.relSpread, 4),
    perRound: perRound.map((x) => round(x, 4)),
    meetsTarget: r.target === undefined ? null : median >= r.target,
  }
}

function checkAgreement(definition: ProfileDefinition, outcomes: ReadonlyMap<string, Outcome>): Agreement[] {
  const out: Agreement[] = []
  for (const pair of definition.agree ?? []) {
    const a = outcomes.get(pair[0])
    const b = outcomes.get(pair[1])
    if (a === undefined || b === undefined) continue
    if (a.checksum !== undefined && b.checksum !== undefined) {
      out.push({ pair, compared: 1, mismatches: a.checksum === b.checksum ? [] : [`checksum ${a.checksum} vs ${b.checksum}`] })
    } else if (a.totals !== undefined && b.totals !== undefined) {
      out.push(compareTotals(pair, a.totals, b.totals, Math.min(a.watermark ?? 0, b.watermark ?? 0)))
    }
  }
  return out
}

/**
 * Every window that both have fired (end at or below both watermarks) must have the same end,
 * count and sum (a session's end is part of what it is); sums to 1e-9 relative, since the engine
 * adds its per-source cells in source order.
 */
function compareTotals(pair: readonly [string, string], a: WindowTotals, b: WindowTotals, upTo: number): Agreement {
  const mismatches: string[] = []
  let compared = 0
  for (const [id, x] of a) {
    if (x.end > upTo) continue
    compared++
    const y = b.get(id)
    if (y === undefined || y.end !== x.end || y.count !== x.count || !sameSum(x.sum, y.sum)) {
      mismatches.push(`${id.replaceAll('\u0000', '/')}: end ${x.end}, ${x.count}/${x.sum} vs ${y === undefined ? 'missing' : `end ${y.end}, ${y.count}/${y.sum}`}`)
    }
  }
  for (const [id, y] of b) {
    if (y.end <= upTo && !a.has(id)) mismatches.push(`${id.replaceAll('\u0000', '/')}: missing vs ${y.count}/${y.sum}`)
  }
  return { pair, compared, mismatches }
}

function sameSum(a: number, b: number): boolean {
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b))
}

function roundSpread(s: Spread): Spread {
  return { median: round(s.median, 2), min: round(s.min, 2), max: round(s.max, 2), relSpread: round(s.relSpread, 4), runs: s.runs.map((x) => round(x, 2)) }
}

function round(x: number, digits: number): number {
  return Number.isFinite(x) ? Number(x.toFixed(digits)) : x
}

/** `--name=text` read as a whole number of at least `min`, or a RangeError naming the flag: `--rounds=abc` ran no round at all. */
function wholeArg(name: string, text: string, min: number): number {
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN
  if (!(Number.isSafeInteger(n) && n >= min)) throw new RangeError(`--${name} must be a whole number >= ${min}, got ${JSON.stringify(text)}`)
  return n
}

export function parseProfileArgs(argv: readonly string[]): ProfileOptions & { json: boolean } {
  const value = (name: string): string | null => {
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i] as string
      if (arg === `--${name}`) return argv[i + 1] ?? null
      if (arg.startsWith(`--${name}=`)) return arg.slice(name.length + 3)
    }
    return null
  }
  const json = argv.includes('--json')
  const only = value('only')
  const rounds = value('rounds')
  const warmup = value('warmup')
  return {
    json,
    only: only === null ? null : only.split(','),
    rounds: rounds === null ? null : wholeArg('rounds', rounds, 1),
    warmup: warmup === null ? null : wholeArg('warmup', warmup, 0),
    memory: !argv.includes('--no-memory'),
    settleGc: argv.includes('--forced-gc'),
    progress: (line) => process.stderr.write(`  ${line}\n`),
  }
}

/** Entry point of a profile file: prepares the workload, runs, prints JSON (`--json`) or a summary. */
export async function runProfileCli(define: () => ProfileDefinition): Promise<void> {
  const options = parseProfileArgs(process.argv.slice(2))
  const t0 = performance.now()
  const definition = define()
  const prepareMs = performance.now() - t0
  options.progress(`${definition.name}: ${definition.events.toLocaleString('en')} events in ${definition.batches} batches, prepared in ${prepareMs.toFixed(0)} ms`)
  const figures = await runProfile(definition, options, prepareMs)
  if (options.json) {
    process.stdout.write(`${JSON.stringify(figures)}\n`)
    return
  }
  process.stdout.write(`${summaryLines(figures).join('\n')}\n`)
}

export function summaryLines(f: ProfileFigures): string[] {
  const lines = [`${f.profile}: ${f.events.toLocaleString('en')} events, ${f.rounds} rounds after warm-up (at least ${f.warmup} runs and ${WARM_CPU_MS} ms of CPU per contender)`]
  for (const c of f.contenders) {
    const m = c.memory
    lines.push(
      `  ${c.name.padEnd(15)} ${c.timeMs.median.toFixed(1).padStart(9)} ms cpu (±${(c.timeMs.relSpread * 100).toFixed(1)}%, wall ${c.wallMs.median.toFixed(1)}) ` +
        `${c.eventsPerSec.toLocaleString('en').padStart(12)} ev/s` +
        (m === null ? '' : `  heap peak ${m.heapPeakMB} MB, retained ${m.retainedMB} MB, ${m.gcCount} GCs ${m.gcPauseMs} ms`) +
        `  end ${JSON.stringify(c.end)}`,
    )
  }
  for (const r of f.ratios) lines.push(`  ${r.label}: ${formatRatio(r)}`)
  return lines
}

export function formatRatio(r: Pick<RatioFigures, 'format' | 'median' | 'min' | 'max'>): string {
  return r.format === 'percent'
    ? `${(r.median * 100).toFixed(1)}% [${(r.min * 100).toFixed(1)}–${(r.max * 100).toFixed(1)}]`
    : `${r.median.toFixed(1)}× [${r.min.toFixed(1)}–${r.max.toFixed(1)}]`
}
