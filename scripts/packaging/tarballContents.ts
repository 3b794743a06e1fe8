/**
 * What a packed tarball must and must not hold, beyond what publint checks: the files a user
 * needs (LICENSE, README, every export target), nothing a user does not (tests, tsconfig,
 * build info), a complete set of outputs per module, source maps whose sources are in the
 * tarball (why src/ is published), and no `workspace:` protocol left in the manifest.
 */
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import type { PackageManifest } from './publicPackages.ts'
import type { Tarball } from './packTarballs.ts'

const REQUIRED = ['package.json', 'LICENSE', 'README.md']
const FORBIDDEN: readonly { readonly pattern: RegExp; readonly why: string }[] = [
  { pattern: /(^|\/)(test|tests|__tests__)\//, why: 'a test folder' },
  { pattern: /\.(test|spec)\.[cm]?[jt]sx?$/, why: 'a test file' },
  { pattern: /(^|\/)tsconfig[^/]*\.json$/, why: 'a tsconfig' },
  { pattern: /\.tsbuildinfo$/, why: 'build info' },
  { pattern: /(^|\/)node_modules\//, why: 'node_modules' },
]
const DEPENDENCY_FIELDS = ['dependencies', 'peerDependencies', 'optionalDependencies'] as const

/**
 * The problems of one tarball, given the directory it was extracted to (its `package/`
 * folder); an empty list when it is fine.
 *
 * @example
 * const problems = tarballProblems(tarball, '/tmp/x/package')
 * if (problems.length > 0) throw new Error(problems.join('\n'))
 */
export function tarballProblems(tarball: Tarball, extracted: string): string[] {
  const files = new Set(tarball.files)
  const problems: string[] = []
  for (const file of REQUIRED) if (!files.has(file)) problems.push(`${file} is missing`)
  for (const file of tarball.files) {
    for (const { pattern, why } of FORBIDDEN) if (pattern.test(file)) problems.push(`${file} is ${why}; keep it out of "files"`)
  }
  for (const entry of tarball.pkg.entries) {
    for (const target of [entry.types, entry.js, entry.source]) {
      if (target === undefined) problems.push(`export "${entry.subpath}" lacks a target`)
      else if (!files.has(normalize(target))) problems.push(`export "${entry.subpath}" points at ${target}, which is not in the tarball`)
    }
  }
  problems.push(...binTargetProblems(tarball, files, extracted))
  problems.push(...outputProblems(files), ...mapProblems(files, extracted), ...manifestProblems(extracted))
  return problems
}

/** Every command in `bin` is in the tarball and starts with a `#!/usr/bin/env node` line, so the installed command runs. */
function binTargetProblems(tarball: Tarball, files: ReadonlySet<string>, extracted: string): string[] {
  const file = join(extracted, 'package.json')
  if (!existsSync(file)) return []
  const { bin } = JSON.parse(readFileSync(file, 'utf8')) as PackageManifest
  const commands = typeof bin === 'string' ? { [tarball.pkg.name]: bin } : (bin ?? {})
  const problems: string[] = []
  for (const [command, target] of Object.entries(commands)) {
    if (!files.has(normalize(target))) problems.push(`bin.${command} points at ${target}, which is not in the tarball`)
    else if (!readFileSync(join(extracted, target), 'utf8').startsWith('#!/usr/bin/env node\n')) problems.push(`bin.${command}: ${target} does not start with #!/usr/bin/env node`)
  }
  return problems
}

/** Each built module has its .js, .js.map, .d.ts and .d.ts.map, and comes from a module in src/. */
function outputProblems(files: ReadonlySet<string>): string[] {
  const problems: string[] = []
  for (const file of files) {
    if (!file.startsWith('dist/')) continue
    const base = file.replace(/\.(js|js\.map|d\.ts|d\.ts\.map)$/, '')
    if (base === file) {
      problems.push(`${file}: not a build output (.js, .d.ts or their maps)`)
      continue
    }
    for (const suffix of ['.js', '.js.map', '.d.ts', '.d.ts.map']) {
      if (!files.has(`${base}${suffix}`)) problems.push(`${file}: ${base}${suffix} is missing`)
    }
    const source = `src/${base.slice('dist/'.length)}`
    if (!files.has(`${source}.ts`) && !files.has(`${source}.tsx`)) problems.push(`${file}: no ${source}.ts(x) it was built from (stale output?)`)
  }
  return problems
}

/** Every source a map names is in the tarball, so a debugger or "go to definition" lands in real code. */
function mapProblems(files: ReadonlySet<string>, extracted: string): string[] {
  const problems: string[] = []
  for (const file of files) {
    if (!file.endsWith('.map')) continue
    const map = JSON.parse(readFileSync(join(extracted, file), 'utf8')) as { sources?: unknown }
    if (!Array.isArray(map.sources) || map.sources.length === 0) {
      problems.push(`${file}: names no sources`)
      continue
    }
    for (const source of map.sources) {
      const inTarball = relative(extracted, join(extracted, dirname(file), String(source)))
      if (!files.has(inTarball)) problems.push(`${file}: source ${String(source)} (${inTarball}) is not in the tarball`)
    }
  }
  return problems
}

/** pnpm rewrites `workspace:` ranges on pack; one left behind cannot be installed. */
function manifestProblems(extracted: string): string[] {
  const file = join(extracted, 'package.json')
  if (!existsSync(file)) return []
  const manifest = JSON.parse(readFileSync(file, 'utf8')) as PackageManifest & { optionalDependencies?: Record<string, string> }
  const problems: string[] = []
  for (const field of DEPENDENCY_FIELDS) {
    for (const [name, range] of Object.entries(manifest[field] ?? {})) {
      if (range.startsWith('workspace:')) problems.push(`package.json ${field}.${name} is still "${range}"`)
    }
  }
  return problems
}
