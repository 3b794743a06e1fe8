/**
 * Runs every Node benchmark profile in turn and writes bench/results/latest.json
 * and bench/results/latest.md. `--stream` runs only the streaming profiles.
 *
 *   pnpm bench
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

interface Profile {
  readonly name: string
  readonly streaming: boolean
  readonly load: () => Promise<{ run: () => Record<string, unknown> }>
}

const profiles: readonly Profile[] = [
  { name: 'streaming-100k', streaming: true, load: () => import('./streaming-100k.ts') },
  { name: 'streaming-150k-watermark-lag', streaming: true, load: () => import('./streaming-150k-watermark-lag.ts') },
]

const onlyStreaming = process.argv.includes('--stream')
const results: Record<string, unknown>[] = []
for (const profile of profiles) {
  if (onlyStreaming && !profile.streaming) continue
  process.stdout.write(`running ${profile.name} ...\n`)
  const module = await profile.load()
  const figures = module.run()
  results.push({ name: profile.name, ...figures })
  process.stdout.write(`${JSON.stringify(figures)}\n`)
}

const dir = join(dirname(fileURLToPath(import.meta.url)), 'results')
mkdirSync(dir, { recursive: true })
const stamp = { date: new Date().toISOString(), node: process.version, results }
writeFileSync(join(dir, 'latest.json'), `${JSON.stringify(stamp, null, 2)}\n`)
const rows = results.map((r) => `| ${String(r.name)} | ${JSON.stringify(r.ratio ?? '')} | ${JSON.stringify(r.engineEventsPerSec ?? r.eventsPerSec ?? '')} |`)
writeFileSync(
  join(dir, 'latest.md'),
  `# Latest benchmark run\n\n${stamp.date}, Node ${stamp.node}\n\n| profile | ratio to baseline | events/s |\n| --- | --- | --- |\n${rows.join('\n')}\n`,
)
process.stdout.write(`wrote ${join(dir, 'latest.json')}\n`)
