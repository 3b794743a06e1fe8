/**
 * The publishing rules every public package's package.json and folder follow, checked before
 * anything is built: ESM only, an `exports` map whose entries resolve to src/ in the workspace
 * (the `@tidemark/source` condition) and to dist/ everywhere else, the published `files`,
 * MIT license, repository with its directory, Node >= 20, `workspace:^` between siblings,
 * the build scripts, a tsconfig.build.json, a LICENSE and a size budget; for a Node-only
 * package (nodePackages.ts), its command in `bin`, built from src/, and no size budget.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { isNodePackage, NODE_PACKAGES } from './nodePackages.ts'
import type { PublicPackage } from './publicPackages.ts'
import { BUDGET_FILE } from './sizeBudget.ts'

const FILES = ['dist', 'src', 'README.md', 'LICENSE', 'CHANGELOG.md']
const CONDITION_ORDER = ['@tidemark/source', 'types', 'default']
const BUILD_SCRIPT = 'tsc -p tsconfig.build.json'
const PREPACK_SCRIPT = 'pnpm run build'
const BUILD_TSCONFIG_BASE = '../../tsconfig.package.json'

/**
 * The rule violations of one package (empty when it follows them all). `privateNames` are
 * the workspace's private packages, which a published package cannot depend on.
 *
 * @example
 * const problems = manifestProblems(pkg, repoRoot, readBudgets(repoRoot), new Set(['@tidemark/testkit']))
 */
export function manifestProblems(
  pkg: PublicPackage,
  root: string,
  budgets: Readonly<Record<string, number>>,
  privateNames: ReadonlySet<string>,
): string[] {
  const m = pkg.manifest
  const problems: string[] = []
  const expect = (ok: boolean, problem: string): void => {
    if (!ok) problems.push(problem)
  }
  expect(m.type === 'module', '"type" must be "module" (the packages are ESM only)')
  expect(m.license === 'MIT', '"license" must be "MIT"')
  expect(m.sideEffects === false, '"sideEffects" must be false (no module does work at import time)')
  expect(m.engines?.node === '>=20', '"engines.node" must be ">=20"')
  expect(typeof m.repository?.url === 'string' && m.repository.type === 'git', '"repository" needs type "git" and a url')
  expect(m.repository?.directory === pkg.path, `"repository.directory" must be "${pkg.path}"`)
  expect(JSON.stringify(m.files) === JSON.stringify(FILES), `"files" must be ${JSON.stringify(FILES)}`)
  expect(m.scripts?.build === BUILD_SCRIPT, `"scripts.build" must be "${BUILD_SCRIPT}"`)
  expect(m.scripts?.prepack === PREPACK_SCRIPT, `"scripts.prepack" must be "${PREPACK_SCRIPT}" (a manual pnpm pack builds first)`)
  expect(m.exports?.['./package.json'] === './package.json', '"exports" must include "./package.json": "./package.json"')
  expect(pkg.entries.some((entry) => entry.subpath === '.'), '"exports" needs a main entry "."')
  for (const [subpath, target] of Object.entries(m.exports ?? {})) {
    if (subpath === './package.json') continue
    problems.push(...entryProblems(subpath, target))
  }
  for (const field of ['dependencies', 'peerDependencies'] as const) {
    for (const [name, range] of Object.entries(m[field] ?? {})) {
      if (privateNames.has(name)) problems.push(`${field}.${name}: a private package cannot be installed by users`)
      else if (name.startsWith('@tidemark/') && field === 'dependencies' && range !== 'workspace:^') {
        problems.push(`dependencies.${name} must be "workspace:^" (pnpm pack turns it into ^<version>)`)
      }
    }
  }
  const tsconfig = join(pkg.dir, 'tsconfig.build.json')
  // Read as text: a tsconfig may hold comments, which JSON.parse refuses.
  expect(
    existsSync(tsconfig) && new RegExp(`"extends"\\s*:\\s*"${BUILD_TSCONFIG_BASE.replaceAll('.', '\\.')}"`).test(readFileSync(tsconfig, 'utf8')),
    `tsconfig.build.json must exist and extend "${BUILD_TSCONFIG_BASE}"`,
  )
  const license = join(pkg.dir, 'LICENSE')
  expect(
    existsSync(license) && readFileSync(license, 'utf8') === readFileSync(join(root, 'LICENSE'), 'utf8'),
    'LICENSE must exist and match the root LICENSE',
  )
  if (isNodePackage(pkg)) {
    problems.push(...binProblems(pkg))
    expect(budgets[pkg.name] === undefined, `a Node-only package goes into no browser bundle: remove its size budget from ${BUDGET_FILE}`)
  } else {
    expect(budgets[pkg.name] !== undefined, `no size budget: add "${pkg.name}": <gzip bytes> to ${BUDGET_FILE}`)
  }
  return problems
}

/** A Node-only package's `bin` names its smoke-tested command, and every command is dist/X.js built from src/X.ts. */
function binProblems(pkg: PublicPackage): string[] {
  const bin = pkg.manifest.bin
  const smoke = NODE_PACKAGES[pkg.name]
  const problems: string[] = []
  if (typeof bin !== 'object' || bin === null) return [`"bin" must map each command to ./dist/<path>.js (a Node-only package is run as a command)`]
  if (smoke !== undefined && bin[smoke.bin] === undefined) problems.push(`"bin" must have the command ${smoke.bin} (its smoke test in scripts/packaging/nodePackages.ts)`)
  for (const [command, target] of Object.entries(bin)) {
    const base = /^\.\/dist\/(.+)\.js$/.exec(target)?.[1]
    if (base === undefined) problems.push(`bin.${command} must be ./dist/<path>.js, is ${target}`)
    else if (!existsSync(join(pkg.dir, 'src', `${base}.ts`))) problems.push(`bin.${command}: no src/${base}.ts to build ${target} from`)
  }
  return problems
}

/** An entry maps `@tidemark/source` to src/X.ts(x), `types` to dist/X.d.ts and `default` to dist/X.js, in that order. */
function entryProblems(subpath: string, target: unknown): string[] {
  if (typeof target !== 'object' || target === null) return [`exports["${subpath}"] must be an object of conditions`]
  const conditions = target as Record<string, unknown>
  const keys = Object.keys(conditions)
  if (JSON.stringify(keys) !== JSON.stringify(CONDITION_ORDER)) {
    return [`exports["${subpath}"] must have exactly the conditions ${CONDITION_ORDER.join(', ')} in that order, has ${keys.join(', ')}`]
  }
  const source = String(conditions['@tidemark/source'])
  const base = /^\.\/src\/(.+)\.tsx?$/.exec(source)?.[1]
  if (base === undefined) return [`exports["${subpath}"]["@tidemark/source"] must be ./src/<path>.ts(x), is ${source}`]
  const problems: string[] = []
  if (conditions.types !== `./dist/${base}.d.ts`) problems.push(`exports["${subpath}"].types must be ./dist/${base}.d.ts`)
  if (conditions.default !== `./dist/${base}.js`) problems.push(`exports["${subpath}"].default must be ./dist/${base}.js`)
  return problems
}
