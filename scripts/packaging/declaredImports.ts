/**
 * Every package a built package imports at runtime must be one it declares (dependencies or
 * peerDependencies): anything else works in the workspace, where pnpm links devDependencies,
 * and fails for a user who installs the tarball. Node's builtin modules need no declaration.
 */
import { builtinModules } from 'node:module'
import { join } from 'node:path'
import { moduleGraph, packageOf } from './moduleGraph.ts'
import type { PackageManifest, PublicPackage } from './publicPackages.ts'

/** What the imports check found for one package. */
export interface DeclaredImports {
  /** Modules walked from the package's entries. */
  readonly modules: number
  /** Packages imported (bare specifiers reduced to their package). */
  readonly imported: readonly string[]
  readonly problems: readonly string[]
}

/**
 * Walks the built entries of `pkg` under `root` (the package dir or an extracted tarball) and
 * lists imports of packages that `manifest` does not declare.
 *
 * @example
 * const { problems } = await declaredImports(pkg, '/tmp/x/package', manifest)
 */
export async function declaredImports(pkg: PublicPackage, root: string, manifest: PackageManifest): Promise<DeclaredImports> {
  const bin = manifest.bin === undefined ? [] : typeof manifest.bin === 'string' ? [manifest.bin] : Object.values(manifest.bin)
  // Its commands too: they run from the tarball as much as its entries do.
  const entries = [...pkg.entries.flatMap((entry) => (entry.js === undefined ? [] : [join(root, entry.js)])), ...bin.map((target) => join(root, target))]
  const graph = await moduleGraph(entries)
  const declared = new Set([pkg.name, ...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})])
  const imported = new Set<string>()
  const problems: string[] = []
  for (const [specifier, importers] of graph.bareImports) {
    const name = packageOf(specifier)
    imported.add(name)
    if (!declared.has(name) && !isNodeBuiltin(name)) {
      const where = importers.map((file) => file.slice(root.length + 1)).join(', ')
      problems.push(`imports "${specifier}" (${where}) but ${name} is not in dependencies or peerDependencies`)
    }
  }
  return { modules: graph.modules.length, imported: [...imported].sort(), problems }
}

/**
 * True for Node's own modules (`node:fs`, `fs`), which a package for Node imports without declaring them.
 *
 * @example
 * isNodeBuiltin('node:path') // true
 */
export function isNodeBuiltin(specifier: string): boolean {
  return specifier.startsWith('node:') || builtinModules.includes(specifier)
}
