import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { declaredImports, isNodeBuiltin } from '../declaredImports.ts'
import { packageOf } from '../moduleGraph.ts'
import type { PublicPackage } from '../publicPackages.ts'

const root = mkdtempSync(join(tmpdir(), 'tidemark-imports-test-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('declaredImports', () => {
  it('reports a runtime import of a package that is only a devDependency', async () => {
    mkdirSync(join(root, 'dist'))
    writeFileSync(join(root, 'dist/index.js'), "export * from 'lib0/encoding'\nexport * from './store.js'\n")
    writeFileSync(join(root, 'dist/store.js'), "import 'fake-indexeddb/auto'\nimport 'node:fs'\nexport { openDB } from 'idb'\n")
    const pkg = { name: '@tidemark/example', entries: [{ subpath: '.', js: './dist/index.js' }] } as unknown as PublicPackage
    const result = await declaredImports(pkg, root, { name: pkg.name, version: '0.0.0', dependencies: { idb: '^8' }, peerDependencies: { lib0: '*' } })
    expect(result.modules).toBe(2)
    expect(result.imported).toEqual(['fake-indexeddb', 'idb', 'lib0', 'node:fs'])
    expect(result.problems).toEqual([
      'imports "fake-indexeddb/auto" (dist/store.js) but fake-indexeddb is not in dependencies or peerDependencies',
    ])
  })

  it('needs no declaration for Node builtins', () => {
    expect(isNodeBuiltin('node:fs')).toBe(true)
    expect(isNodeBuiltin('path')).toBe(true)
    expect(isNodeBuiltin('idb')).toBe(false)
  })

  it('reduces a specifier to its package', () => {
    expect(packageOf('lib0/encoding')).toBe('lib0')
    expect(packageOf('@tidemark/engine/adapter')).toBe('@tidemark/engine')
    expect(packageOf('node:fs')).toBe('node:fs')
  })
})
