/**
 * The packages this repository publishes: every package under packages/ whose package.json
 * is not `private`. Every packaging step (build, pack, tarball checks, size budget, consumer
 * test) starts from this list, so a new public package is picked up without editing them.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository root (this file lives in scripts/packaging/). */
export const repoRoot = fileURLToPath(new URL('../..', import.meta.url))

/** One export condition map of a package entry, as this repository writes it. */
export interface EntryConditions {
  readonly '@tidemark/source'?: string
  readonly types?: string
  readonly default?: string
  readonly [condition: string]: string | undefined
}

/** The package.json fields the packaging steps read. */
export interface PackageManifest {
  readonly name: string
  readonly version: string
  readonly private?: boolean
  readonly type?: string
  readonly license?: string
  readonly sideEffects?: boolean
  readonly repository?: { readonly type?: string; readonly url?: string; readonly directory?: string }
  readonly engines?: { readonly node?: string }
  readonly files?: readonly string[]
  /** Commands the package installs: name to script (a single string names one after the package). */
  readonly bin?: string | Readonly<Record<string, string>>
  readonly scripts?: Readonly<Record<string, string>>
  readonly exports?: Readonly<Record<string, EntryConditions | string>>
  readonly dependencies?: Readonly<Record<string, string>>
  readonly peerDependencies?: Readonly<Record<string, string>>
  readonly devDependencies?: Readonly<Record<string, string>>
}

/** One subpath export (`.`, `./adapter`, ...) with its three targets, relative to the package. */
export interface PackageEntry {
  readonly subpath: string
  readonly source: string | undefined
  readonly types: string | undefined
  readonly js: string | undefined
}

/** A package under packages/; the public ones are built, packed and checked. */
export interface PublicPackage {
  readonly name: string
  readonly version: string
  /** Absolute path of the package directory. */
  readonly dir: string
  /** Path from the repository root, e.g. `packages/engine`. */
  readonly path: string
  readonly manifest: PackageManifest
  /** Subpath exports other than `./package.json`. */
  readonly entries: readonly PackageEntry[]
}

/**
 * Every package under packages/, private ones included, sorted by name.
 *
 * @example
 * const privateNames = packagesFolder().filter((p) => p.manifest.private === true).map((p) => p.name)
 */
export function packagesFolder(root: string = repoRoot): PublicPackage[] {
  const packagesDir = join(root, 'packages')
  const found: PublicPackage[] = []
  for (const dirName of readdirSync(packagesDir)) {
    const manifestFile = join(packagesDir, dirName, 'package.json')
    if (!existsSync(manifestFile)) continue
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as PackageManifest
    found.push({
      name: manifest.name,
      version: manifest.version,
      dir: join(packagesDir, dirName),
      path: `packages/${dirName}`,
      manifest,
      entries: entriesOf(manifest),
    })
  }
  return found.sort((a, b) => a.name.localeCompare(b.name))
}

/**
 * Every non-private package under packages/, sorted by name.
 *
 * @example
 * for (const pkg of publicPackages()) console.log(pkg.name, pkg.entries.map((e) => e.subpath))
 */
export function publicPackages(root: string = repoRoot): PublicPackage[] {
  return packagesFolder(root).filter((pkg) => pkg.manifest.private !== true)
}

function entriesOf(manifest: PackageManifest): PackageEntry[] {
  return Object.entries(manifest.exports ?? {})
    .filter(([subpath]) => subpath !== './package.json')
    .map(([subpath, target]) => {
      const conditions: EntryConditions = typeof target === 'string' ? { default: target } : target
      return { subpath, source: conditions['@tidemark/source'], types: conditions.types, js: conditions.default ?? conditions.import }
    })
}
