/**
 * `pnpm release:check`: everything a release needs, in one command.
 *
 *   1. typecheck      tsc over the whole workspace
 *   2. lint           Biome
 *   3. tests          every Vitest project, except the fuzz gate (step 5)
 *   4. bench:check    the perf guard, when the workspace defines it (skipped with a note otherwise)
 *   5. fuzz gate      packages/testkit/test/fuzz-gate.test.ts: every fuzz scenario, fixed seeds,
 *                     fixed iteration budgets (longer campaigns: `pnpm fuzz`)
 *   6. packages       `pnpm test:packages`: build, pack and check the public packages (publint,
 *                     attw, size budget) and install them into a fresh consumer app
 *   7. docs:api       `pnpm docs:api`: the TypeDoc API reference (warnings are errors)
 *   8. e2e            `pnpm e2e`: the Playwright tests in Debian Chromium (`bash scripts/setup.sh` first)
 *
 * These are the steps of `pnpm test`, plus the perf guard.
 *
 * Every step runs even when an earlier one failed, so one run shows everything that is wrong;
 * the exit code is 1 when any step failed.
 */
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const GATE = 'packages/testkit/test/fuzz-gate.test.ts'
const scripts = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts ?? {}

const steps = [
  { name: 'typecheck', command: ['pnpm', 'typecheck'] },
  { name: 'lint', command: ['pnpm', 'lint'] },
  { name: 'tests', command: ['pnpm', 'exec', 'vitest', 'run', '--exclude', GATE] },
  scripts['bench:check'] === undefined
    ? { name: 'bench:check', skip: 'no bench:check script in package.json' }
    : { name: 'bench:check', command: ['pnpm', 'bench:check'] },
  { name: 'fuzz gate', command: ['pnpm', 'exec', 'vitest', 'run', GATE] },
  { name: 'packages', command: ['pnpm', 'test:packages'] },
  { name: 'docs:api', command: ['pnpm', 'docs:api'] },
  { name: 'e2e', command: ['pnpm', 'e2e'] },
]

const outcomes = []
for (const step of steps) {
  if (step.skip !== undefined) {
    console.log(`\n=== release:check: ${step.name} skipped (${step.skip})`)
    outcomes.push({ name: step.name, status: 'skipped', seconds: 0 })
    continue
  }
  console.log(`\n=== release:check: ${step.name}: ${step.command.join(' ')}`)
  const started = Date.now()
  const run = spawnSync(step.command[0], step.command.slice(1), { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' })
  const status = run.status === 0 ? 'ok' : run.error !== undefined ? `failed (${run.error.message})` : `failed (exit ${run.status ?? run.signal})`
  outcomes.push({ name: step.name, status, seconds: (Date.now() - started) / 1000 })
}

console.log('\n=== release:check summary')
for (const o of outcomes) console.log(`  ${o.name.padEnd(12)} ${o.status.padEnd(24)} ${o.seconds.toFixed(1)}s`)
const failed = outcomes.filter((o) => o.status.startsWith('failed'))
console.log(failed.length === 0 ? 'release:check passed' : `release:check FAILED: ${failed.map((o) => o.name).join(', ')}`)
process.exitCode = failed.length === 0 ? 0 : 1
