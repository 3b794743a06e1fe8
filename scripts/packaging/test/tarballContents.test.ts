import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { Tarball } from '../packTarballs.ts'
import type { PublicPackage } from '../publicPackages.ts'
import { tarballProblems } from '../tarballContents.ts'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

const pkg = {
  name: '@tidemark/example',
  entries: [{ subpath: '.', source: './src/index.ts', types: './dist/index.d.ts', js: './dist/index.js' }],
} as unknown as PublicPackage

const MAP = JSON.stringify({ version: 3, sources: ['../src/index.ts'], mappings: '' })
const GOOD: Record<string, string> = {
  'package.json': JSON.stringify({ name: '@tidemark/example', dependencies: { '@tidemark/engine': '^0.1.0' } }),
  LICENSE: 'MIT',
  'README.md': '# example',
  'src/index.ts': 'export const a = 1',
  'dist/index.js': 'export const a = 1',
  'dist/index.js.map': MAP,
  'dist/index.d.ts': 'export declare const a = 1',
  'dist/index.d.ts.map': MAP,
}

/** Writes `files` as an extracted tarball and returns its problems. */
function problemsOf(files: Record<string, string>): string[] {
  const root = mkdtempSync(join(tmpdir(), 'tidemark-tarball-test-'))
  dirs.push(root)
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  const tarball: Tarball = { pkg, file: 'example.tgz', files: Object.keys(files).sort() }
  return tarballProblems(tarball, root)
}

describe('tarballProblems', () => {
  it('finds nothing wrong with a complete tarball', () => {
    expect(problemsOf(GOOD)).toEqual([])
  })

  it('reports missing files, tests, tsconfigs, stale output, broken maps and workspace ranges', () => {
    const { LICENSE: _license, 'dist/index.d.ts.map': _map, ...rest } = GOOD
    const problems = problemsOf({
      ...rest,
      'package.json': JSON.stringify({ name: '@tidemark/example', peerDependencies: { '@tidemark/engine': 'workspace:^' } }),
      'src/index.test.ts': '',
      'tsconfig.build.json': '{}',
      'dist/gone.js': '',
      'dist/gone.js.map': JSON.stringify({ version: 3, sources: ['../src/gone.ts'], mappings: '' }),
      'dist/gone.d.ts': '',
      'dist/gone.d.ts.map': JSON.stringify({ version: 3, sources: [], mappings: '' }),
    })
    expect(problems).toEqual([
      'LICENSE is missing',
      'src/index.test.ts is a test file; keep it out of "files"',
      'tsconfig.build.json is a tsconfig; keep it out of "files"',
      'dist/gone.d.ts: no src/gone.ts(x) it was built from (stale output?)',
      'dist/gone.d.ts.map: no src/gone.ts(x) it was built from (stale output?)',
      'dist/gone.js: no src/gone.ts(x) it was built from (stale output?)',
      'dist/gone.js.map: no src/gone.ts(x) it was built from (stale output?)',
      'dist/index.d.ts: dist/index.d.ts.map is missing',
      'dist/index.js: dist/index.d.ts.map is missing',
      'dist/index.js.map: dist/index.d.ts.map is missing',
      'dist/gone.d.ts.map: names no sources',
      'dist/gone.js.map: source ../src/gone.ts (src/gone.ts) is not in the tarball',
      'package.json peerDependencies.@tidemark/engine is still "workspace:^"',
    ])
  })

  it('reports an export whose target is not packed', () => {
    const { 'dist/index.js': _js, ...rest } = GOOD
    expect(problemsOf(rest)).toContain('export "." points at ./dist/index.js, which is not in the tarball')
  })

  it('reports a command that is not packed or would not run as one', () => {
    const withBin = (bin: Record<string, string>, cli: string | null): Record<string, string> => {
      const files: Record<string, string> = { ...GOOD, 'package.json': JSON.stringify({ name: '@tidemark/example', bin }) }
      if (cli !== null) Object.assign(files, { 'src/cli.ts': '', 'dist/cli.js': cli, 'dist/cli.js.map': MAP, 'dist/cli.d.ts': '', 'dist/cli.d.ts.map': MAP })
      return files
    }
    expect(problemsOf(withBin({ example: './dist/cli.js' }, '#!/usr/bin/env node\nawait main()\n'))).toEqual([])
    expect(problemsOf(withBin({ example: './dist/cli.js' }, 'await main()\n'))).toEqual(['bin.example: ./dist/cli.js does not start with #!/usr/bin/env node'])
    expect(problemsOf(withBin({ example: './dist/cli.js' }, null))).toEqual(['bin.example points at ./dist/cli.js, which is not in the tarball'])
  })
})
