/**
 * CPU profile of one profile's subject (Tidemark only, no peers, no memory runs), written to
 * bench/results/<profile>.cpuprofile (open it in Chrome DevTools › Performance, or VS Code), and
 * a summary of the hottest functions by self time, printed and written beside it as
 * <profile>.hotspots.txt. Both are git-ignored.
 *
 *   pnpm bench:profile streaming-150k-watermark-lag [--contender=ordered-stream] [--rounds=N]
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import type { Profiler } from 'node:inspector'
import { join, relative } from 'node:path'
import { REPO_DIR, RESULTS_DIR, runProfileProcess } from './harness/child.ts'
import { declarationLine, fileOf } from './harness/sourceLocation.ts'

interface Hotspot {
  readonly name: string
  readonly file: string
  self: number
  total: number
}

const argv = process.argv.slice(2)
const profile = argv.find((a) => !a.startsWith('--'))
if (profile === undefined || !existsSync(join(REPO_DIR, 'bench', `${profile}.ts`))) {
  process.stderr.write('usage: pnpm bench:profile <profile> [--contender=NAME] [--rounds=N], e.g. streaming-150k-watermark-lag\n')
  process.exit(2)
}
const contender = argv.find((a) => a.startsWith('--contender='))?.slice('--contender='.length) ?? (profile === 'ordered-stream-flush' ? 'ordered-stream' : 'tidemark')
const rounds = argv.find((a) => a.startsWith('--rounds=')) ?? '--rounds=10'
const name = `${profile}.cpuprofile`

const child = await runProfileProcess(
  profile,
  [`--only=${contender}`, '--no-memory', rounds, '--warmup=2'],
  (line) => process.stdout.write(`[${profile}] ${line.trim()}\n`),
  ['--cpu-prof', `--cpu-prof-dir=${RESULTS_DIR}`, `--cpu-prof-name=${name}`],
)
if (child.code !== 0) throw new Error(`${profile} failed:\n${child.tail}`)

const cpu = JSON.parse(readFileSync(join(RESULTS_DIR, name), 'utf8')) as Profiler.Profile
const summary = summarize(cpu)
writeFileSync(join(RESULTS_DIR, `${profile}.hotspots.txt`), summary)
process.stdout.write(summary)
process.stdout.write(`profile: ${relative(REPO_DIR, join(RESULTS_DIR, name))}\n`)

function summarize(p: Profiler.Profile): string {
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  const selfById = new Map<number, number>()
  const samples = p.samples ?? []
  let totalUs = 0
  for (let i = 0; i < samples.length; i++) {
    const id = samples[i] as number
    const dt = p.timeDeltas?.[i] ?? 0
    selfById.set(id, (selfById.get(id) ?? 0) + dt)
    totalUs += dt
  }
  const spots = new Map<string, Hotspot>()
  const spotOf = (node: Profiler.ProfileNode): Hotspot => {
    const file = fileOf(node.callFrame.url)
    const fn = node.callFrame.functionName || '(anonymous)'
    const key = `${fn}\u0000${file}`
    let spot = spots.get(key)
    if (spot === undefined) {
      spot = { name: fn, file, self: 0, total: 0 }
      spots.set(key, spot)
    }
    return spot
  }
  // Inclusive time: each node's subtree, counted once per function even under recursion.
  const visit = (id: number, open: Set<Hotspot>): number => {
    const node = byId.get(id) as Profiler.ProfileNode
    const spot = spotOf(node)
    const self = selfById.get(id) ?? 0
    spot.self += self
    const entered = !open.has(spot)
    if (entered) open.add(spot)
    let total = self
    for (const child of node.children ?? []) total += visit(child, open)
    if (entered) {
      open.delete(spot)
      spot.total += total
    }
    return total
  }
  const root = p.nodes[0]
  if (root !== undefined) visit(root.id, new Set())

  const ms = (us: number) => (us / 1000).toFixed(1).padStart(8)
  const share = (us: number) => `${((us / totalUs) * 100).toFixed(1).padStart(5)}%`
  const all = [...spots.values()]
  const engine = all.filter((s) => s.file.startsWith('packages/engine/'))
  const engineSelf = engine.reduce((n, s) => n + s.self, 0)
  const lines: string[] = [
    `CPU profile of ${profile} (${contender} only): ${(totalUs / 1000).toFixed(0)} ms sampled; engine code ${share(engineSelf).trim()} self time`,
    '',
    'Top functions by self time (total = inclusive; line = the declaration, found by name):',
    `${'self ms'.padStart(8)} ${'self'.padStart(6)} ${'total ms'.padStart(8)}  function`,
  ]
  for (const s of all.sort((a, b) => b.self - a.self).slice(0, 25)) {
    lines.push(`${ms(s.self)} ${share(s.self)} ${ms(s.total)}  ${s.name}  ${s.file}${declarationLine(s.name, s.file)}`)
  }
  lines.push('', 'Engine functions by inclusive time:')
  for (const s of engine.sort((a, b) => b.total - a.total).slice(0, 15)) {
    lines.push(`${ms(s.total)} ${share(s.total)}  ${s.name}  ${s.file}${declarationLine(s.name, s.file)}`)
  }
  const byFile = new Map<string, number>()
  for (const s of all) byFile.set(s.file, (byFile.get(s.file) ?? 0) + s.self)
  lines.push('', 'Self time by file:')
  for (const [file, us] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 12)) lines.push(`${ms(us)} ${share(us)}  ${file}`)
  return `${lines.join('\n')}\n`
}
