import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { manifestProblems } from '../manifestRules.ts'
import { type PackageManifest, type PublicPackage, publicPackages, repoRoot } from '../publicPackages.ts'
import { readBudgets } from '../sizeBudget.ts'

const budgets = readBudgets(repoRoot)
const engine = publicPackages().find((pkg) => pkg.name === '@tidemark/engine') as PublicPackage

function withManifest(change: (manifest: Record<string, unknown>) => void): PublicPackage {
  const manifest = structuredClone(engine.manifest) as unknown as Record<string, unknown>
  change(manifest)
  return { ...engine, manifest: manifest as unknown as PackageManifest }
}

describe('manifestProblems', () => {
  it('finds nothing wrong with the public packages as they are', () => {
    const packages = publicPackages()
    expect(packages.map((pkg) => pkg.name)).toEqual(expect.arrayContaining(['@tidemark/engine', '@tidemark/idb', '@tidemark/react', '@tidemark/yjs']))
    for (const pkg of packages) expect(manifestProblems(pkg, repoRoot, budgets, new Set()), pkg.name).toEqual([])
  })

  it('names each broken rule', () => {
    const broken = withManifest((m) => {
      m.type = 'commonjs'
      m.files = ['dist']
      m.sideEffects = true
      m.repository = { type: 'git', url: 'x', directory: 'packages/wrong' }
      m.dependencies = { '@tidemark/yjs': '^0.1.0', '@tidemark/testkit': 'workspace:^' }
      m.exports = {
        '.': { types: './dist/index.d.ts', default: './dist/index.js' },
        './adapter': { '@tidemark/source': './src/adapter.ts', types: './dist/adapter.d.ts', default: './dist/other.js' },
      }
    })
    expect(manifestProblems(broken, repoRoot, budgets, new Set(['@tidemark/testkit']))).toEqual([
      '"type" must be "module" (the packages are ESM only)',
      '"sideEffects" must be false (no module does work at import time)',
      '"repository.directory" must be "packages/engine"',
      '"files" must be ["dist","src","README.md","LICENSE","CHANGELOG.md"]',
      '"exports" must include "./package.json": "./package.json"',
      'exports["."] must have exactly the conditions @tidemark/source, types, default in that order, has types, default',
      'exports["./adapter"].default must be ./dist/adapter.js',
      'dependencies.@tidemark/yjs must be "workspace:^" (pnpm pack turns it into ^<version>)',
      'dependencies.@tidemark/testkit: a private package cannot be installed by users',
    ])
  })

  it('asks for a size budget and a LICENSE in a new package', () => {
    const fresh: PublicPackage = { ...engine, name: '@tidemark/new', dir: join(repoRoot, 'packages', 'no-such-dir') }
    expect(manifestProblems(fresh, repoRoot, budgets, new Set())).toEqual([
      'tsconfig.build.json must exist and extend "../../tsconfig.package.json"',
      'LICENSE must exist and match the root LICENSE',
      'no size budget: add "@tidemark/new": <gzip bytes> to scripts/packaging/size-budget.json',
    ])
  })

  it('asks a Node-only package for its command in bin, built from src/, and no size budget', () => {
    const relay = publicPackages().find((pkg) => pkg.name === '@tidemark/relay') as PublicPackage
    expect(manifestProblems(relay, repoRoot, budgets, new Set())).toEqual([])
    const broken: PublicPackage = { ...relay, manifest: { ...relay.manifest, bin: { 'tidemark-relay': './bin/relay.js', 'relay-tool': './dist/nothing.js' } } }
    expect(manifestProblems(broken, repoRoot, { ...budgets, '@tidemark/relay': 40_000 }, new Set())).toEqual([
      'bin.tidemark-relay must be ./dist/<path>.js, is ./bin/relay.js',
      'bin.relay-tool: no src/nothing.ts to build ./dist/nothing.js from',
      'a Node-only package goes into no browser bundle: remove its size budget from scripts/packaging/size-budget.json',
    ])
    const noBin: PublicPackage = { ...relay, manifest: { ...relay.manifest, bin: { other: './dist/cli.js' } } }
    expect(manifestProblems(noBin, repoRoot, budgets, new Set())).toEqual(['"bin" must have the command tidemark-relay (its smoke test in scripts/packaging/nodePackages.ts)'])
  })
})
