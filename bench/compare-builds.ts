/**
 * Two or more builds of the engine on one profile's Tidemark contender. Each process runs every
 * build in interleaved rounds (the order rotating each round), each build as two series: the
 * spread between a build's own two series is what the machine's noise makes of the same code.
 * The comparison is repeated in fresh processes, as each process compiles the code its own way
 * (what V8 inlines, and when, moves a build by several percent from one process to the next):
 * a difference between builds that does not hold in every process is not one. The build that
 * runs first rotates from one process to the next: the profile's calls into the engine are shared
 * by every build, and the build that reaches them first is served fastest by their inline caches
 * (two copies of one build measured 4–5% apart on streaming-100k when the same one always went
 * first). Run as many processes as builds, or a multiple, so that each goes first as often.
 *
 * Per process and series: the mean of the fastest half of its runs (process CPU time, as the
 * bench's: one run of the window profiles takes 10–60 ms, far above the clock's resolution, and
 * the time a loaded machine keeps the process waiting is left out), as a ratio to the first
 * build's first series. Then per build: the median of its ratios over the processes, and their range.
 *
 * A build is a directory holding the engine's `index.js` and a package.json saying
 * `{"type":"module"}`: copy `packages/engine/dist` after `pnpm --filter @tidemark/engine build`,
 * once per variant, and add that file (without it the build loads as CommonJS, and is refused).
 *
 *   node --import tsx --conditions=@tidemark/source bench/compare-builds.ts \
 *     --profile=correction-churn --builds=/tmp/before,/tmp/after [--rounds=30] [--processes=3]
 */
import { spawnSync } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { Engine, EngineOptions } from '@tidemark/engine'
import type { Contender } from './harness/contender.ts'
import type { ProfileDefinition } from './harness/profile.ts'
import { sampleOnce } from './measure.ts'
import { engineBuild } from './peers/tidemark.ts'

interface Series {
  readonly build: string
  readonly create: (options: EngineOptions) => Engine
  readonly times: number[]
}

/** What one process measured: per build, its two series' times (ms). */
type ProcessResult = Record<string, [number, number]>

function arg(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
}

/** `createEngine` of the build in `dir`. */
async function load(dir: string): Promise<(options: EngineOptions) => Engine> {
  const module = (await import(pathToFileURL(`${dir}/index.js`).href)) as { createEngine?: (options: EngineOptions) => Engine }
  if (typeof module.createEngine !== 'function') throw new Error(`${dir}/index.js exports no createEngine: is it a build of @tidemark/engine?`)
  // Outside a `"type": "module"` package, tsx turns the build into CommonJS whose exports are
  // getters: each call across modules then goes through one, and two such builds in one process
  // share those getters' feedback, so one of them runs up to 1.6 times slower than the other.
  if (Object.getOwnPropertyDescriptor(module, 'createEngine')?.get !== undefined) {
    throw new Error(`${dir}/index.js was loaded as CommonJS, not as an ES module: add ${dir}/package.json with {"type":"module"}`)
  }
  return module.createEngine
}

/** Mean of the fastest half: the runs the machine disturbed least. */
function fastestHalf(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b).slice(0, Math.max(1, times.length >> 1))
  return sorted.reduce((a, b) => a + b, 0) / sorted.length
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

/** One process: every build, two series each, in interleaved rounds. */
async function measure(profile: string, builds: readonly string[], rounds: number, first: number): Promise<ProcessResult> {
  const { define } = (await import(`./${profile}.ts`)) as { define: () => ProfileDefinition }
  const contender = define().contenders.find((c) => c.name === 'tidemark') as Contender | undefined
  if (contender === undefined) throw new Error(`profile ${profile} has no tidemark contender`)
  const loaded = await Promise.all(builds.map(load))
  const series: Series[] = []
  for (let twice = 0; twice < 2; twice++) {
    for (let b = 0; b < builds.length; b++) series.push({ build: builds[b] as string, create: loaded[b] as Series['create'], times: [] })
  }
  const probe = { tick: () => {} }
  const warmup = 3
  for (let r = 0; r < warmup + rounds; r++) {
    for (let k = 0; k < series.length; k++) {
      const s = series[(r + k + first) % series.length] as Series
      engineBuild.create = s.create
      // Process CPU time, as the bench's: the seconds a loaded machine keeps the process waiting are not the build's.
      const { cpuMs } = sampleOnce(() => contender.run({ probe, record: false }))
      if (r >= warmup) s.times.push(cpuMs)
    }
  }
  const result: ProcessResult = {}
  for (let b = 0; b < builds.length; b++) {
    result[builds[b] as string] = [fastestHalf((series[b] as Series).times), fastestHalf((series[b + builds.length] as Series).times)]
  }
  return result
}

const profile = arg('profile')
const builds = arg('builds')
  ?.split(',')
  .filter((b) => b !== '')
const rounds = Number(arg('rounds') ?? 30)
const processes = Number(arg('processes') ?? 3)
if (profile === undefined || builds === undefined || builds.length === 0 || !(rounds > 0) || !(processes > 0)) {
  throw new Error('usage: bench/compare-builds.ts --profile=<name> --builds=<dir>,<dir>[,...] [--rounds=N] [--processes=N]')
}

if (process.argv.includes('--child')) {
  process.stdout.write(JSON.stringify(await measure(profile, builds, rounds, Number(arg('first') ?? 0))))
} else {
  // Refuse a build that loads as CommonJS before any process is spent on it.
  await Promise.all(builds.map(load))
  const script = fileURLToPath(import.meta.url)
  const ratios = new Map<string, number[]>(builds.map((b) => [b, []]))
  console.log(`${profile}: ${processes} processes × ${rounds} rounds; per process, each build's two series as a ratio to the first build's first (the build run first rotates: *)`)
  for (let p = 0; p < processes; p++) {
    const first = p % builds.length
    const child = spawnSync(process.execPath, [...process.execArgv, script, ...process.argv.slice(2), '--child', `--first=${first}`], { encoding: 'utf8', maxBuffer: 1 << 20 })
    if (child.status !== 0) throw new Error(`process ${p + 1} failed (exit ${child.status}): ${child.stderr}`)
    const result = JSON.parse(child.stdout) as ProcessResult
    const reference = (result[builds[0] as string] as [number, number])[0]
    const line: string[] = []
    builds.forEach((build, b) => {
      const [one, two] = result[build] as [number, number]
      ratios.get(build)?.push((one + two) / 2 / reference)
      line.push(`${(one / reference).toFixed(3)} ${(two / reference).toFixed(3)}${b === first ? '*' : ' '}`)
    })
    console.log(`  process ${p + 1}: ${line.join(' | ')}   (${reference.toFixed(2)} ms for the first)`)
  }
  for (const build of builds) {
    const r = ratios.get(build) as number[]
    console.log(`  ${build.padEnd(40)} ×${median(r).toFixed(3)} [${Math.min(...r).toFixed(3)}–${Math.max(...r).toFixed(3)}]`)
  }
}
