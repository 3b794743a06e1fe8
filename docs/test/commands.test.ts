/**
 * What the guides, the root README, the docs index and the READMEs of apps/demo, e2e/ and bench/
 * tell a reader to run: every `pnpm`
 * command names a script of the package it runs in (or a binary of the workspace), the e2e
 * README's table lists exactly the specs of e2e/tests, and `pnpm start`'s settings are the ones
 * scripts/demo.mjs reads and the e2e suite sets.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = new URL('../..', import.meta.url).pathname
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8')
const scriptsOf = (packageDir: string): Record<string, string> => (JSON.parse(read(join(packageDir, 'package.json'))) as { scripts?: Record<string, string> }).scripts ?? {}

/** The files whose commands a reader runs as they are written. */
const DOCUMENTS = [
  'README.md',
  'docs/README.md',
  'docs/getting-started.md',
  ...readdirSync(join(ROOT, 'docs/recipes')).map((file) => `docs/recipes/${file}`),
  'apps/demo/README.md',
  'e2e/README.md',
  'bench/README.md',
]

/** The workspace packages by name, each with its folder. */
function workspacePackages(): Map<string, string> {
  const packages = new Map<string, string>()
  for (const parent of ['packages', 'apps', 'docs', 'e2e']) {
    const dirs = existsSync(join(ROOT, parent, 'package.json')) ? [parent] : readdirSync(join(ROOT, parent)).map((dir) => join(parent, dir))
    for (const dir of dirs) {
      if (!existsSync(join(ROOT, dir, 'package.json'))) continue
      packages.set((JSON.parse(read(join(dir, 'package.json'))) as { name: string }).name, dir)
    }
  }
  return packages
}

/** `pnpm` subcommands that are pnpm's own, not scripts. */
const PNPM_COMMANDS = new Set(['install', 'exec', 'add'])

describe('commands the docs give', () => {
  const commands = DOCUMENTS.flatMap((document) =>
    [...read(document).matchAll(/\bpnpm (?:--filter (\S+) )?([a-z][\w:-]*)/g)].map(([text, filter, name]) => ({ document, text, filter, name: name as string })),
  )

  it('finds the commands', () => {
    expect(commands.map((c) => c.text)).toEqual(
      expect.arrayContaining(['pnpm start', 'pnpm demo', 'pnpm relay', 'pnpm e2e', 'pnpm --filter @tidemark/demo dev', 'pnpm bench:check', 'pnpm release:check', 'pnpm docs:api']),
    )
  })

  it('runs a script of the package each names, or a workspace binary', () => {
    const packages = workspacePackages()
    for (const { document, text, filter, name } of commands) {
      if (PNPM_COMMANDS.has(name)) continue
      const dir = filter === undefined ? '.' : packages.get(filter)
      expect(dir, `${document}: ${text}: no workspace package ${filter}`).toBeDefined()
      const runnable = name in scriptsOf(dir as string) || existsSync(join(ROOT, 'node_modules/.bin', name))
      expect(runnable, `${document}: ${text}: no script ${name} in ${dir}/package.json`).toBe(true)
    }
  })

  it('names only vitest projects that exist (`--project demo`)', () => {
    const config = read('vitest.config.ts')
    for (const document of DOCUMENTS) {
      for (const [, project] of read(document).matchAll(/vitest run --project ([\w-]+)/g)) expect(config, `${document}: --project ${project}`).toContain(`project('${project}'`)
    }
  })
})

describe('e2e/README.md', () => {
  it('describes every spec of e2e/tests in its table, and no other', () => {
    const listed = [...read('e2e/README.md').matchAll(/^\| `tests\/([\w.-]+\.spec\.ts)` \|/gm)].map(([, file]) => file)
    const specs = readdirSync(join(ROOT, 'e2e/tests')).filter((file) => file.endsWith('.spec.ts'))
    expect(listed.sort()).toEqual(specs.sort())
  })

  it('gives the ports the suite uses by default, 4183 for its pages and 4184 for the demo', () => {
    expect(read('e2e/README.md')).toContain('when another run holds 4183/4184')
    const config = read('e2e/vite.config.ts')
    expect(config).toMatch(/E2E_PORT = Number\(process\.env\.E2E_PORT \?\? 4183\)/)
    expect(config).toMatch(/DEMO_E2E_PORT = Number\(process\.env\.DEMO_E2E_PORT \?\? 4184\)/)
  })
})

describe('apps/demo/README.md: pnpm start', () => {
  const demo = read('scripts/demo.mjs')
  it('reads the settings the README names, and the e2e suite sets the first three', () => {
    for (const variable of ['DEMO_PORT', 'DEMO_OUT_DIR', 'DEMO_RELAY_DIR', 'DEMO_SKIP_BUILD']) {
      expect(read('apps/demo/README.md')).toContain(`\`${variable}`)
      expect(demo, variable).toContain(`process.env.${variable}`)
    }
    const playwright = read('e2e/playwright.config.ts')
    for (const variable of ['DEMO_PORT', 'DEMO_OUT_DIR', 'DEMO_RELAY_DIR']) expect(playwright, variable).toMatch(new RegExp(`\\b${variable}: `))
  })

  it('serves on 127.0.0.1:5173 with --strictPort, and gives the page server 3 s and the relay 15 s to stop', () => {
    expect(demo).toContain("process.env.DEMO_PORT || '5173'")
    expect(demo).toContain("const host = '127.0.0.1'")
    expect(demo).toContain("'--strictPort'")
    expect(demo).toContain('const KILL_GRACE_MS = { relay: 15_000, preview: 3_000 }')
  })
})
