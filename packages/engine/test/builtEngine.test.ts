/**
 * The engine as it is published: built to dist/ (the test builds it first, with the package's
 * own build script), its four entries resolved through package.json `exports`. Its module
 * graph imports no package at all (so no Yjs, idb, React, y-* or lib0), and importing it in
 * plain Node with every browser global removed touches none of them.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildPackages } from '../../../scripts/packaging/buildPackages.ts'
import { moduleGraph } from '../../../scripts/packaging/moduleGraph.ts'
import { type PublicPackage, publicPackages } from '../../../scripts/packaging/publicPackages.ts'

const FORBIDDEN = /^(yjs|idb|react|react-dom|lib0|y-[^/]+|@tidemark\/(yjs|idb|react))(\/|$)/
const TRAP = fileURLToPath(new URL('./importWithoutDom.mjs', import.meta.url))
const SUBPATHS = ['.', './adapter', './ordered', './testing']

interface TrapReport {
  readonly modules: readonly { readonly file: string; readonly exports: readonly string[] }[]
  readonly atImport: readonly string[]
  readonly run: readonly { start: number; end: number; count: number; sum: number }[] | null
  readonly atRun: readonly string[]
}

const engine = publicPackages().find((pkg) => pkg.name === '@tidemark/engine') as PublicPackage
const distDir = join(engine.dir, 'dist')
const entryFiles = (): string[] => engine.entries.map((entry) => join(engine.dir, entry.js ?? `(no default target for ${entry.subpath})`))
const fixtures = mkdtempSync(join(tmpdir(), 'tidemark-built-engine-'))

/** Built modules with code in them; a module of types only compiles to `export {};`. */
function runtimeModules(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.js'))
    .map((file) => join(dir, file))
    .filter((file) => readFileSync(file, 'utf8').replace(/\/\/# sourceMappingURL=.*$/m, '').replace('export {};', '').trim() !== '')
    .sort()
}

function trap(args: readonly string[]): TrapReport {
  const child = spawnSync(process.execPath, [TRAP, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH } })
  if (child.status !== 0) throw new Error(`importWithoutDom.mjs exited with ${child.status}:\n${child.stderr}`)
  return JSON.parse(child.stdout) as TrapReport
}

beforeAll(async () => {
  await buildPackages([engine])
}, 120_000)

afterAll(() => rmSync(fixtures, { recursive: true, force: true }))

describe('the built @tidemark/engine', () => {
  it('exports its four entries from dist/', () => {
    expect(engine.entries.map((entry) => entry.subpath)).toEqual(SUBPATHS)
    for (const entry of engine.entries) {
      expect(entry.js).toMatch(/^\.\/dist\/.+\.js$/)
      expect(entry.types).toMatch(/^\.\/dist\/.+\.d\.ts$/)
      expect(readFileSync(join(engine.dir, entry.js as string), 'utf8')).toContain('export')
      expect(readFileSync(join(engine.dir, entry.types as string), 'utf8')).toContain('export')
    }
  })

  it('walks every built module from the entries and finds no package import', async () => {
    const graph = await moduleGraph(entryFiles())
    const expected = runtimeModules(distDir)
    // Not vacuous: the walk reached every module that has code, and there are many.
    expect(expected.length).toBeGreaterThan(40)
    expect(graph.modules).toEqual(expected)
    const imports = [...graph.bareImports.keys()]
    expect(imports.filter((specifier) => FORBIDDEN.test(specifier))).toEqual([])
    // The engine has no runtime dependency at all, not even a Node builtin.
    expect(imports).toEqual([])
  })

  it('imports in plain Node with the browser globals removed and touches none of them', () => {
    const report = trap(['--run-engine', ...entryFiles()])
    expect(report.modules.map((m) => m.file)).toEqual(entryFiles())
    for (const m of report.modules) expect(m.exports.length).toBeGreaterThan(3)
    expect(report.modules[0]?.exports).toContain('createEngine')
    expect(report.atImport).toEqual([])
    // It runs there too: a tumbling window over three events, and still no browser global.
    expect(report.run).toEqual([
      { start: 0, end: 10, count: 2, sum: 5 },
      { start: 10, end: 20, count: 1, sum: 5 },
    ])
    expect(report.atRun).toEqual([])
  })

  it('the graph walk reports what it looks for', async () => {
    const a = join(fixtures, 'a.js')
    writeFileSync(a, "import * as Y from 'yjs'\nexport { Y }\nexport * from './b.js'\n")
    writeFileSync(join(fixtures, 'b.js'), "export * from 'y-protocols/sync'\nexport const lazy = () => import('lib0/encoding')\n")
    const graph = await moduleGraph([a])
    expect(graph.modules).toEqual([a, join(fixtures, 'b.js')])
    expect([...graph.bareImports.keys()].sort()).toEqual(['lib0/encoding', 'y-protocols/sync', 'yjs'])
    expect([...graph.bareImports.keys()].every((specifier) => FORBIDDEN.test(specifier))).toBe(true)
  })

  it('the trap reports a module that reads browser globals at import', () => {
    const probe = join(fixtures, 'probe.js')
    writeFileSync(probe, "export const inBrowser = typeof window !== 'undefined'\nexport const db = globalThis.indexedDB\n")
    expect(trap([probe]).atImport).toEqual(['read window', 'read indexedDB'])
  })
})
