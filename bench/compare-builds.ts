/**
 * Two or more builds of the engine on one profile's Tidemark contender, in one process, in
 * interleaved rounds (the order rotating each round). Each build runs as two series, so the
 * spread between a build's own two series shows what the machine's noise alone makes of the
 * same code: a difference between builds smaller than that is not one. Reports each series'
 * time (the mean of its fastest half of runs, wall clock: one run of the tumbling profiles
 * takes 10–60 ms, far above the timer's resolution) and its ratio to the first build's first.
 *
 * A build is a directory holding the engine's `index.js`: copy `packages/engine/dist` after
 * `pnpm --filter @tidemark/engine build`, once per variant.
 *
 *   node --import tsx --conditions=@tidemark/source bench/compare-builds.ts \
 *     --profile=correction-churn --builds=/tmp/before,/tmp/after [--rounds=40]
 */
import { pathToFileURL } from 'node:url'
import type { Engine, EngineOptions } from '@tidemark/engine'
import type { Contender } from './harness/contender.ts'
import type { ProfileDefinition } from './harness/profile.ts'
import { engineBuild } from './peers/tidemark.ts'

interface Series {
  readonly build: string
  readonly create: (options: EngineOptions) => Engine
  readonly times: number[]
}

function arg(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
}

/** `createEngine` of the build in `dir`. */
async function load(dir: string): Promise<(options: EngineOptions) => Engine> {
  const module = (await import(pathToFileURL(`${dir}/index.js`).href)) as { createEngine?: (options: EngineOptions) => Engine }
  if (typeof module.createEngine !== 'function') throw new Error(`${dir}/index.js exports no createEngine: is it a build of @tidemark/engine?`)
  return module.createEngine
}

/** Mean of the fastest half: the runs the machine disturbed least. */
function fastestHalf(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b).slice(0, Math.max(1, times.length >> 1))
  return sorted.reduce((a, b) => a + b, 0) / sorted.length
}

const profile = arg('profile')
const builds = arg('builds')?.split(',').filter((b) => b !== '')
const rounds = Number(arg('rounds') ?? 40)
if (profile === undefined || builds === undefined || builds.length === 0 || !(rounds > 0)) {
  throw new Error('usage: bench/compare-builds.ts --profile=<name> --builds=<dir>,<dir>[,...] [--rounds=N]')
}
const { define } = (await import(`./${profile}.ts`)) as { define: () => ProfileDefinition }
const contender = define().contenders.find((c) => c.name === 'tidemark') as Contender | undefined
if (contender === undefined) throw new Error(`profile ${profile} has no tidemark contender`)
const loaded = await Promise.all(builds.map(load))
const series: Series[] = []
for (let twice = 0; twice < 2; twice++) {
  for (let b = 0; b < builds.length; b++) series.push({ build: builds[b] as string, create: loaded[b] as Series['create'], times: [] })
}
const probe = { tick: () => {} }
const WARMUP = 3
for (let r = 0; r < WARMUP + rounds; r++) {
  for (let k = 0; k < series.length; k++) {
    const s = series[(r + k) % series.length] as Series
    engineBuild.create = s.create
    const start = process.hrtime.bigint()
    contender.run({ probe, record: false })
    const ms = Number(process.hrtime.bigint() - start) / 1e6
    if (r >= WARMUP) s.times.push(ms)
  }
}
const reference = fastestHalf((series[0] as Series).times)
console.log(`${profile}: ${rounds} rounds; per series, the mean of its fastest half of runs (wall ms)`)
for (const s of series) {
  const ms = fastestHalf(s.times)
  console.log(`  ${s.build.padEnd(40)} ${ms.toFixed(2).padStart(8)} ms  ×${(ms / reference).toFixed(3)}`)
}
