/**
 * Writes bench/results/latest.json, latest.md and latest.svg from the profiles' figures. Kept
 * small on purpose (committed): no per-event data, a few numbers per contender.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ratioChart } from './chart.ts'
import { type ContenderFigures, formatRatio, type ProfileFigures, type RatioFigures } from './profile.ts'

/** A profile from the issue that this suite does not run (yet), listed so the table is honest about it. */
export interface MissingProfile {
  readonly name: string
  readonly where: 'node' | 'browser'
  readonly status: string
}

export interface BenchRun {
  readonly date: string
  readonly node: string
  readonly cpu: string
  readonly cores: number
  /** Engine commit measured (and uncommitted engine files, if any). */
  readonly engine: string
  /** 1-minute load average when the run started and ended: other processes compete on a shared machine. */
  readonly load: { readonly start: number; readonly end: number }
  readonly wallMs: number
  readonly results: readonly ProfileFigures[]
  readonly failures: readonly { readonly profile: string; readonly error: string }[]
  readonly missing: readonly MissingProfile[]
}

export function writeReport(dir: string, run: BenchRun): void {
  writeFileSync(join(dir, 'latest.json'), `${JSON.stringify(run, null, 1)}\n`)
  writeFileSync(join(dir, 'latest.md'), reportMarkdown(run))
  writeFileSync(join(dir, 'latest.svg'), ratioChart(run.results.filter((f) => f.ratios.length > 0)))
}

function ratio(f: ProfileFigures, name: string): RatioFigures | undefined {
  return f.ratios.find((r) => r.name === name)
}

function contender(f: ProfileFigures, name: string): ContenderFigures | undefined {
  return f.contenders.find((c) => c.name === name)
}

/** The contender a profile is about: the window engine, or the ordered stream where there is no engine. */
export function subjectOf(f: ProfileFigures): ContenderFigures | undefined {
  return contender(f, 'tidemark') ?? contender(f, 'ordered-stream')
}

function rate(c: ContenderFigures | undefined): string {
  return c === undefined ? '–' : c.eventsPerSec.toLocaleString('en')
}

function cellRatio(r: RatioFigures | undefined): string {
  if (r === undefined) return '–'
  const mark = r.meetsTarget === null ? '' : r.meetsTarget ? ' ✓' : ' ✗'
  return `${formatRatio(r)}${mark}`
}

/** How many processes the run's profiles pooled, when more than one (`--processes=N`). */
function processNote(run: BenchRun): string {
  const counts = [...new Set(run.results.map((f) => f.processes ?? 1))].sort((a, b) => a - b)
  if (counts.length === 1 && counts[0] === 1) return ''
  return `; each profile ran in ${counts.join(' or ')} processes, one after another, and its figures pool their rounds`
}

/** The Markdown report of a run (`latest.md`). */
export function reportMarkdown(run: BenchRun): string {
  const lines: string[] = []
  lines.push('# Tidemark benchmarks: latest run', '')
  lines.push(
    `${run.date.slice(0, 16).replace('T', ' ')} UTC · engine ${run.engine} · Node ${run.node} · ${run.cpu} × ${run.cores} · load average ${run.load.start.toFixed(1)} → ${run.load.end.toFixed(1)} · ${(run.wallMs / 1000).toFixed(0)} s`,
    '',
  )
  lines.push(
    `Ratios are the headline: every profile runs Tidemark, a plain-loop floor and an RxJS 7 peer on the same events in one process, in interleaved rounds after warm-up${processNote(run)}. Times are CPU time of the process (see bench/README.md); ev/s = events per CPU-second.`,
    'Shown: median [min–max over rounds]. `% of floor` is Tidemark throughput as a share of the floor (higher is better; target ≥ 35%, ≥ 40% on streaming-100k; on sliding-1h-1m the floor also slices); `× RxJS` is how many times faster than RxJS (target ≥ 20×). ✓/✗ mark the targets.',
    'Window totals of Tidemark and RxJS (and of the rules and cells floors, where they run: one hand-written loop keeping the engine\'s rules, and the same keeping a cell per source as replication needs, see bench/README.md) are checked equal window by window in every run (the ordered streams: same emitted sequence).',
    '',
  )
  lines.push('| profile | events | Tidemark ev/s | floor ev/s | RxJS ev/s | % of floor | × RxJS | other |')
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |')
  for (const f of run.results) {
    const subject = subjectOf(f)
    const extra = f.ratios
      .filter((r) => r.name !== 'engine/floor' && r.name !== 'engine-vs-rxjs')
      .map((r) => `${r.label}: ${cellRatio(r)}`)
    if (f.showTimes === true) extra.unshift(f.contenders.map((c) => `${c.name} ${c.timeMs.median.toFixed(1)} ms`).join(', '))
    const target = f.timeTarget
    const timed = target === undefined ? undefined : contender(f, target.contender)
    if (target !== undefined && timed !== undefined) {
      // Judged on elapsed time: process CPU time also counts V8's parallel GC threads (about a third more here).
      const ms = timed.wallMs.median
      extra.unshift(
        `target: ${target.contender} < ${target.maxMs} ms elapsed: ${ms.toFixed(1)} ms ${ms < target.maxMs ? '✓' : '✗'} (process CPU ${timed.timeMs.median.toFixed(1)} ms)`,
      )
    }
    for (const gauge of f.showGauges ?? []) {
      const owner = f.contenders.find((c) => c.end[gauge] !== undefined)
      if (owner !== undefined) extra.push(`${gauge} ${num(owner.end[gauge])}`)
    }
    if (f.headline !== undefined) extra.push(f.headline)
    const ordered = f.profile !== 'ordered-stream-flush' ? contender(f, 'ordered-stream') : undefined
    if (ordered !== undefined) extra.unshift(`ordered stream ${rate(ordered)} ev/s`)
    lines.push(
      `| ${f.profile}${f.profile === 'streaming-150k-watermark-lag' ? ' (guard)' : ''} | ${f.events.toLocaleString('en')} | ${rate(subject)} | ${rate(contender(f, 'plain-loop'))} | ${rate(contender(f, 'rxjs'))} | ${cellRatio(ratio(f, 'engine/floor'))} | ${cellRatio(ratio(f, 'engine-vs-rxjs'))} | ${extra.join('; ')} |`,
    )
  }
  for (const m of run.missing) lines.push(`| ${m.name} (${m.where}) | – | – | – | – | – | – | ${m.status} |`)
  for (const failure of run.failures) lines.push(`| ${failure.profile} | failed | – | – | – | – | – | ${failure.error.replaceAll('|', '/').slice(0, 160)} |`)
  lines.push('', '![ratios](latest.svg)', '')
  for (const f of run.results) {
    if (f.tables !== undefined) lines.push(`## ${f.profile}`, '', ...f.tables, '')
  }
  lines.push('## Memory', '')
  lines.push(
    'One observed run per contender (after a priming run, before warm-up), each profile in its own `node --expose-gc` process. Heap in MB (the JS heap plus ArrayBuffer memory, where cells kept as numbers live): at start (after a forced GC) → end (peak sampled per batch); retained = heap after a forced GC with the run\'s state still alive, minus start. Live model = a minimal nested-Map model of Tidemark\'s live windows and cells (the yardstick for "retained ≤ 2× live window state"). Pending = events in windows not yet fired, counted once per window (ordered streams: events waiting).',
    '',
  )
  lines.push('| profile | contender | heap start → end (peak) | RSS peak | GCs (pause ms) | retained | live model | pending at end | live windows at end |')
  lines.push('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const f of run.results) {
    for (const c of f.contenders) {
      const m = c.memory
      if (m === null) continue
      lines.push(
        `| ${f.profile} | ${c.name} | ${m.heapStartMB} → ${m.heapEndMB} (${m.heapPeakMB}) | ${m.rssPeakMB} | ${m.gcCount} (${m.gcPauseMs}) | ${m.retainedMB} | ${m.liveModelMB ?? '–'} | ${num(c.end.pending)} | ${num(c.end.liveWindows)} |`,
      )
    }
  }
  lines.push('', '## Contenders', '')
  const labels = new Map<string, string>()
  for (const f of run.results) for (const c of f.contenders) if (!labels.has(`${c.name}: ${c.label}`)) labels.set(`${c.name}: ${c.label}`, c.name)
  for (const label of labels.keys()) lines.push(`- ${label}`)
  lines.push('', 'Profiles: `bench/<profile>.ts`; raw figures: `latest.json`. Regenerate with `pnpm bench`.', '')
  return lines.join('\n')
}

function num(x: number | undefined): string {
  return x === undefined ? '–' : x.toLocaleString('en')
}
