/**
 * Runs every Node benchmark profile, each in its own process (`--expose-gc`, so heap figures are
 * isolated), shows progress, and writes bench/results/latest.json, latest.md and latest.svg.
 * Profiles not run this time keep their previous figures in the report.
 *
 *   pnpm bench                      all Node profiles
 *   pnpm bench:stream               the streaming profiles only
 *   pnpm bench -- --only=correction-churn,anomaly-heavy [--rounds=N] [--processes=N]
 *   pnpm bench -- --report-only     re-render latest.md and latest.svg from latest.json
 *
 * `--processes=N` runs each profile in N processes, one after another, and pools their rounds
 * (harness/profile.ts, `poolProcesses`): the recorded figures use 3.
 */
import { measuredRevision } from './harness/revision.ts'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { RESULTS_DIR, runProfileProcess } from './harness/child.ts'
import { formatRatio, type ProfileFigures, poolProcesses } from './harness/profile.ts'
import { type BenchRun, writeReport } from './harness/report.ts'
import { parseSuiteArgs, reportedFigures, SEPARATE_PROFILES } from './harness/suite.ts'

const { selected, passThrough, processes, reportOnly } = parseSuiteArgs(process.argv.slice(2))

const started = performance.now()
const loadStart = loadavg()[0] as number
// Read before the run: other engineers may commit while it is going.
const engine = reportOnly ? 'unchanged' : measuredRevision(['packages/engine'])
const fresh: ProfileFigures[] = []
const failures: { profile: string; error: string }[] = []
for (const [i, profile] of selected.entries()) {
  const tag = `[${i + 1}/${selected.length} ${profile.name}]`
  process.stdout.write(`${tag} starting\n`)
  const runs: ProfileFigures[] = []
  let ms = 0
  for (let p = 1; p <= processes; p++) {
    const ptag = processes === 1 ? tag : `${tag} process ${p}/${processes}`
    const child = await runProfileProcess(profile.name, passThrough, (line) => process.stdout.write(`${ptag} ${line.trim()}\n`))
    ms += child.ms
    if (child.figures === null) {
      failures.push({ profile: profile.name, error: child.tail.split('\n').filter(Boolean).slice(-3).join(' ') })
      process.stdout.write(`${ptag} FAILED (exit ${child.code})\n`)
      break
    }
    runs.push(child.figures)
  }
  if (runs.length < processes) continue
  const figures = poolProcesses(runs)
  fresh.push(figures)
  const headline = figures.headline ?? figures.ratios.map((r) => `${r.name} ${formatRatio(r)}`).join(', ')
  process.stdout.write(`${tag} done in ${(ms / 1000).toFixed(1)} s: ${headline}\n`)
}

mkdirSync(RESULTS_DIR, { recursive: true })
const previous = readPrevious()
const results = reportedFigures(fresh, previous)
const previousRun = reportOnly ? readPreviousRun() : null
const run: BenchRun = previousRun !== null ? { ...previousRun, missing: SEPARATE_PROFILES } : {
  date: new Date().toISOString(),
  node: process.version,
  cpu: cpus()[0]?.model.trim() ?? 'unknown cpu',
  cores: cpus().length,
  engine,
  load: { start: Number(loadStart.toFixed(2)), end: Number((loadavg()[0] as number).toFixed(2)) },
  wallMs: Math.round(performance.now() - started),
  results,
  failures,
  missing: SEPARATE_PROFILES,
}
writeReport(RESULTS_DIR, run)
process.stdout.write(`wrote ${join(RESULTS_DIR, 'latest.md')} (+ .json, .svg) in ${(run.wallMs / 1000).toFixed(0)} s\n`)
if (failures.length > 0) {
  process.stdout.write(`${failures.length} profile(s) failed: ${failures.map((f) => f.profile).join(', ')}\n`)
  process.exitCode = 1
}

function readPreviousRun(): BenchRun | null {
  const file = join(RESULTS_DIR, 'latest.json')
  if (!existsSync(file)) return null
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as BenchRun
  } catch {
    return null
  }
}

function readPrevious(): readonly ProfileFigures[] {
  return readPreviousRun()?.results ?? []
}
