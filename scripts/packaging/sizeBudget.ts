/**
 * The gzipped size of each public package, against the budgets in size-budget.json (bytes;
 * 1 kB = 1000 B). What "the size of a package" means here (printed with the table):
 *
 * - The package's main entry (`.`) from its dist/, bundled with rolldown as a browser app's
 *   production build would (minified, `process.env.NODE_ENV` = "production"), with every export
 *   of the entry kept: the whole public API, not what one app happens to use.
 * - Peer dependencies stay external: the app brings them (yjs, y-protocols, react, zustand), and
 *   with them their own dependencies (lib0 comes with yjs): those stay external too.
 * - Other dependencies are bundled from node_modules.
 * - "adds" leaves the sibling @tidemark packages external: what the package adds to an app that
 *   already uses them. The budget applies to it. "with siblings" also bundles the siblings the
 *   package imports (from their dist/, tree-shaken to what it uses), for reference.
 * - Size = gzip (level 9) of the minified bundle.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { constants, gzipSync } from 'node:zlib'
import { rolldown } from 'rolldown'
import { isNodeBuiltin } from './declaredImports.ts'
import type { PublicPackage } from './publicPackages.ts'

/** Where the budgets live; a new public package needs one line here. */
export const BUDGET_FILE = 'scripts/packaging/size-budget.json'

/** The figures of one package. */
export interface PackageSize {
  readonly name: string
  /** gzip bytes with siblings and peers external (the budgeted figure). */
  readonly adds: number
  /** Minified bytes of the same bundle. */
  readonly addsMinified: number
  /** gzip bytes with siblings bundled, peers external. */
  readonly withSiblings: number
  readonly budget: number | undefined
  /** Peers left external. */
  readonly peers: readonly string[]
}

/**
 * Header lines that say what the figures mean, printed above the table.
 *
 * @example
 * console.log(SIZE_DEFINITION.join('\n'))
 */
export const SIZE_DEFINITION: readonly string[] = [
  'size = gzip -9 of the minified ESM bundle of the main entry (every export kept) from dist/, bundled for the browser (rolldown, NODE_ENV=production);',
  'peer dependencies external (the app brings them), and their own dependencies (lib0 comes with yjs); other dependencies bundled;',
  '"adds" = sibling @tidemark packages external, what the package adds next to them (budgeted); "with siblings" = siblings bundled too. 1 kB = 1000 B.',
]

/**
 * Reads the budgets (package name to gzip bytes).
 *
 * @example
 * const budgets = readBudgets('/repo') // { '@tidemark/engine': 25000, ... }
 */
export function readBudgets(root: string): Readonly<Record<string, number>> {
  const budgets = JSON.parse(readFileSync(join(root, BUDGET_FILE), 'utf8')) as Record<string, unknown>
  for (const [name, bytes] of Object.entries(budgets)) {
    if (typeof bytes !== 'number' || !Number.isInteger(bytes) || bytes <= 0) {
      throw new Error(`${BUDGET_FILE}: the budget of ${name} must be a positive whole number of bytes, got ${JSON.stringify(bytes)}`)
    }
  }
  return budgets as Record<string, number>
}

/**
 * Measures one built package (its dist/ must be current).
 *
 * @example
 * const size = await measurePackage(pkg, readBudgets(repoRoot)[pkg.name])
 */
export async function measurePackage(pkg: PublicPackage, budget: number | undefined): Promise<PackageSize> {
  const main = pkg.entries.find((entry) => entry.subpath === '.')
  if (main?.js === undefined) throw new Error(`${pkg.name}: no main entry (exports["."].default) to measure`)
  const entry = join(pkg.dir, main.js)
  const peers = withTheirDependencies(Object.keys(pkg.manifest.peerDependencies ?? {}), pkg.dir)
  const siblings = Object.keys({ ...pkg.manifest.dependencies }).filter((name) => name.startsWith('@tidemark/'))
  const adds = await bundledSize(entry, pkg.dir, [...peers, ...siblings])
  const withSiblings = await bundledSize(entry, pkg.dir, peers)
  return { name: pkg.name, adds: adds.gzip, addsMinified: adds.minified, withSiblings: withSiblings.gzip, budget, peers }
}

/** Peers and the packages they depend on themselves (an app that has yjs has lib0), sorted. */
function withTheirDependencies(peers: readonly string[], dir: string): string[] {
  const all = new Set(peers)
  for (const peer of peers) {
    let manifest: { dependencies?: Record<string, string> }
    try {
      manifest = JSON.parse(readFileSync(join(dir, 'node_modules', peer, 'package.json'), 'utf8')) as typeof manifest
    } catch {
      // A peer not installed next to the package (an optional one) brings nothing we can see.
      continue
    }
    for (const name of Object.keys(manifest.dependencies ?? {})) all.add(name)
  }
  return [...all].sort()
}

/**
 * The size table, one row per package, with a verdict per row.
 *
 * @example
 * console.log(sizeTable(sizes).join('\n'))
 */
export function sizeTable(sizes: readonly PackageSize[]): string[] {
  const kB = (bytes: number): string => `${(bytes / 1000).toFixed(2)} kB`
  const rows = [['package', 'adds (gzip)', 'budget', 'verdict', 'with siblings', 'adds (min)', 'external peers']]
  for (const s of sizes) {
    const verdict = s.budget === undefined ? `NO BUDGET (add to ${BUDGET_FILE})` : s.adds <= s.budget ? 'ok' : `OVER by ${kB(s.adds - s.budget)}`
    rows.push([s.name, kB(s.adds), s.budget === undefined ? '-' : kB(s.budget), verdict, kB(s.withSiblings), kB(s.addsMinified), s.peers.join(', ') || '-'])
  }
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? []
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd())
}

/**
 * True when the package has a budget and is within it.
 *
 * @example
 * const failed = sizes.filter((s) => !withinBudget(s))
 */
export function withinBudget(size: PackageSize): boolean {
  return size.budget !== undefined && size.adds <= size.budget
}

/** Where the import budgets live: what an app that imports only some names of a package pays. */
export const IMPORT_BUDGET_FILE = 'scripts/packaging/import-budgets.json'

/** A budget on a tree-shaken import of some names of a package's main entry. */
export interface ImportBudget {
  readonly package: string
  /** The names imported, as an app would: `import { ...names } from package`. */
  readonly names: readonly string[]
  /** gzip bytes. */
  readonly budget: number
  /** What the import stands for, printed with the figure. */
  readonly meaning: string
}

/** The figure of one import budget. */
export interface ImportSize extends ImportBudget {
  readonly gzip: number
}

/**
 * Reads the import budgets.
 *
 * @example
 * const budgets = readImportBudgets('/repo') // [{ package: '@tidemark/engine', names: ['createEngine', ...], budget: 25000, meaning: '...' }]
 */
export function readImportBudgets(root: string): readonly ImportBudget[] {
  const parsed = JSON.parse(readFileSync(join(root, IMPORT_BUDGET_FILE), 'utf8')) as unknown
  if (!Array.isArray(parsed)) throw new Error(`${IMPORT_BUDGET_FILE}: expected an array of { package, names, budget, meaning }`)
  return parsed.map((item: unknown, index): ImportBudget => {
    const entry = item as Partial<Record<keyof ImportBudget, unknown>>
    const names = entry.names
    const valid =
      typeof entry.package === 'string' &&
      Array.isArray(names) &&
      names.length > 0 &&
      names.every((name) => typeof name === 'string') &&
      typeof entry.budget === 'number' &&
      Number.isInteger(entry.budget) &&
      entry.budget > 0 &&
      typeof entry.meaning === 'string'
    if (!valid) throw new Error(`${IMPORT_BUDGET_FILE}[${index}]: expected { package: string, names: string[] (not empty), budget: positive whole bytes, meaning: string }`)
    return entry as ImportBudget
  })
}

/**
 * Measures a tree-shaken import of some names of a built package's main entry, with the same
 * bundling as {@link measurePackage} (peers and siblings external).
 *
 * @example
 * const size = await measureImport(enginePkg, readImportBudgets('/repo')[0])
 */
export async function measureImport(pkg: PublicPackage, budget: ImportBudget): Promise<ImportSize> {
  const main = pkg.entries.find((entry) => entry.subpath === '.')
  if (main?.js === undefined) throw new Error(`${pkg.name}: no main entry (exports["."].default) to measure`)
  const entryFile = join(pkg.dir, main.js)
  const peers = withTheirDependencies(Object.keys(pkg.manifest.peerDependencies ?? {}), pkg.dir)
  const siblings = Object.keys({ ...pkg.manifest.dependencies }).filter((name) => name.startsWith('@tidemark/'))
  const importer = `export { ${budget.names.join(', ')} } from ${JSON.stringify(entryFile)}`
  const size = await bundledSize(VIRTUAL_IMPORTER, pkg.dir, [...peers, ...siblings], importer)
  return { ...budget, gzip: size.gzip }
}

/**
 * The import-budget table.
 *
 * @example
 * console.log(importTable(sizes).join('\n'))
 */
export function importTable(sizes: readonly ImportSize[]): string[] {
  const kB = (bytes: number): string => `${(bytes / 1000).toFixed(2)} kB`
  return sizes.map((s) => {
    const verdict = s.gzip <= s.budget ? 'ok' : `OVER by ${kB(s.gzip - s.budget)}`
    return `${s.package} { ${s.names.join(', ')} } (${s.meaning}): ${kB(s.gzip)}, budget ${kB(s.budget)}, ${verdict}`
  })
}

const VIRTUAL_IMPORTER = '\0tidemark-size-importer'

async function bundledSize(
  entry: string,
  cwd: string,
  external: readonly string[],
  virtualSource?: string,
): Promise<{ minified: number; gzip: number }> {
  // Node builtins stay external too: a package with a Node side (a test driver) is measured on its browser-bundlable part.
  const isExternal = (id: string): boolean => isNodeBuiltin(id) || external.some((name) => id === name || id.startsWith(`${name}/`))
  const importer =
    virtualSource === undefined
      ? []
      : [
          {
            name: 'tidemark-size-importer',
            resolveId: (id: string) => (id === VIRTUAL_IMPORTER ? id : null),
            load: (id: string) => (id === VIRTUAL_IMPORTER ? virtualSource : null),
          },
        ]
  const bundle = await rolldown({
    input: entry,
    cwd,
    platform: 'browser',
    external: isExternal,
    logLevel: 'silent',
    plugins: importer,
    transform: { define: { 'process.env.NODE_ENV': '"production"' } },
  })
  const { output } = await bundle.generate({ format: 'esm', minify: true })
  await bundle.close()
  const code = output.flatMap((chunk) => (chunk.type === 'chunk' ? [chunk.code] : [])).join('\n')
  return { minified: Buffer.byteLength(code), gzip: gzipSync(code, { level: constants.Z_BEST_COMPRESSION }).length }
}
