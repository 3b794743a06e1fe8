/**
 * What one profile's contender allocates per run, and where: V8's sampling heap profiler over
 * timed-style runs (after warm-up, so the code is optimized as in the bench), every allocation
 * counted whether it survives or not. Reports the bytes per run, then the functions that
 * allocate most, each with the two frames that called it. Allocation drives the scavenges whose
 * helper threads the bench's CPU times include; a number V8 boxes on the path of every event shows
 * up here as about 16 bytes per event.
 *
 *   pnpm bench:alloc correction-churn [--contender=tidemark] [--rounds=20] [--warmup=10]
 */
import { existsSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import type { HeapProfiler } from 'node:inspector'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { BENCH_DIR } from './harness/child.ts'
import { NO_PROBE } from './harness/memory.ts'
import type { ProfileDefinition } from './harness/profile.ts'
import { declarationLine, fileOf } from './harness/sourceLocation.ts'

const argv = process.argv.slice(2)
const profile = argv.find((a) => !a.startsWith('--'))
if (profile === undefined || !existsSync(join(BENCH_DIR, `${profile}.ts`))) {
  process.stderr.write('usage: pnpm bench:alloc <profile> [--contender=NAME] [--rounds=N] [--warmup=N], e.g. correction-churn\n')
  process.exit(2)
}
const option = (name: string, fallback: string): string => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const name = option('contender', 'tidemark')
const count = (flag: string, fallback: string, least: number): number => {
  const n = Number(option(flag, fallback))
  if (!Number.isSafeInteger(n) || n < least) {
    process.stderr.write(`--${flag} must be a whole number of at least ${least}, got ${option(flag, fallback)}\n`)
    process.exit(2)
  }
  return n
}
const rounds = count('rounds', '20', 1)
const warmup = count('warmup', '10', 0)
/** Mean bytes between samples: small enough for a run of a few megabytes to be sampled thousands of times. */
const SAMPLING_INTERVAL = 512

const { define } = (await import(pathToFileURL(join(BENCH_DIR, `${profile}.ts`)).href)) as { define: () => ProfileDefinition }
const contender = define().contenders.find((c) => c.name === name)
if (contender === undefined) throw new Error(`${profile} has no contender ${name}`)
const run = () => contender.run({ probe: NO_PROBE, record: false }).close?.()
for (let r = 0; r < warmup; r++) run()

const session = new Session()
session.connect()
await session.post('HeapProfiler.startSampling', {
  samplingInterval: SAMPLING_INTERVAL,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
})
for (let r = 0; r < rounds; r++) run()
const { profile: sampled } = await session.post('HeapProfiler.stopSampling')
session.disconnect()
process.stdout.write(summarize(sampled))

function summarize(p: HeapProfiler.SamplingHeapProfile): string {
  const frame = (node: HeapProfiler.SamplingHeapProfileNode): string => {
    const file = fileOf(node.callFrame.url)
    const fn = node.callFrame.functionName || '(anonymous)'
    return `${fn} ${file}${declarationLine(fn, file)}`
  }
  const byFunction = new Map<string, number>()
  const byPath = new Map<string, number>()
  let total = 0
  const visit = (node: HeapProfiler.SamplingHeapProfileNode, callers: readonly string[]): void => {
    const here = frame(node)
    if (node.selfSize > 0) {
      total += node.selfSize
      byFunction.set(here, (byFunction.get(here) ?? 0) + node.selfSize)
      const path = [here, ...callers.slice(-2).reverse()].join('  ‹  ')
      byPath.set(path, (byPath.get(path) ?? 0) + node.selfSize)
    }
    for (const child of node.children) visit(child, [...callers, here])
  }
  visit(p.head, [])
  const perRun = (bytes: number) => `${(bytes / rounds / 1e6).toFixed(2).padStart(7)} MB`
  const lines = [
    `Allocation profile of ${profile} (${name}): ${perRun(total).trim()} per run, sampled over ${rounds} runs after ${warmup} warm-up runs`,
    '',
    'Functions by bytes allocated per run:',
  ]
  for (const [fn, bytes] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 15)) lines.push(`${perRun(bytes)}  ${fn}`)
  lines.push('', 'The same, with the two frames that called it (function  ‹  caller  ‹  its caller):')
  for (const [path, bytes] of [...byPath].sort((a, b) => b[1] - a[1]).slice(0, 15)) lines.push(`${perRun(bytes)}  ${path}`)
  return `${lines.join('\n')}\n`
}
