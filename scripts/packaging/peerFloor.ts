/**
 * The browser packages against the lowest versions their peerDependencies allow: the tarballs
 * installed with pnpm into a new project outside the workspace (the sibling @tidemark tarballs
 * through overrides, the rest from the registry, which the shared store serves offline once it
 * has them), every peer at the floor of its range (React 18.0.0 for `>=18`, Yjs 13.6.0 for
 * `^13.6.0`, ...) and React's types at the newest patch of that minor, then `tsc` on a small app
 * (`peer-floor/`, `skipLibCheck` off). The consumer test covers the versions the workspace uses;
 * this covers the other end of each range, where a type a later release of a peer added, or a
 * later release's looser typing, would break an app that the range admits.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Tarball } from './packTarballs.ts'
import { repoRoot } from './publicPackages.ts'
import { runOrFail, runProcess } from './runProcess.ts'
import { toolBin } from './toolBin.ts'

const TEMPLATE = join(repoRoot, 'scripts', 'packaging', 'peer-floor')

/**
 * Packages an app needs beside a peer to typecheck against it, at the newest patch of the peer
 * floor's minor (the types that shipped with it): React's types are not its peer, but an app on
 * React 18.0 has the `@types/react` of 18.0.
 */
const TYPES_OF_PEER: Readonly<Record<string, readonly string[]>> = { react: ['@types/react'] }

/** What one floor run saw. */
export interface PeerFloorResult {
  /** Package name to the version installed: the peers' floors and their types. */
  readonly versions: Readonly<Record<string, string>>
  readonly installMs: number
  readonly tscMs: number
  /** Errors of tsc in the app or in a @tidemark package; empty when it passed. */
  readonly problems: readonly string[]
  /** Errors tsc found inside other packages' own declarations (theirs to fix, not ours), counted. */
  readonly foreignErrors: number
}

/**
 * The lowest version a peer range allows: `>=18` → 18.0.0, `^13.6.0` → 13.6.0, `~1.2` → 1.2.0,
 * `1.0.7` → 1.0.7. Throws for any other form (a union, an upper bound, a prerelease, `x`), so a
 * new kind of range is looked at rather than guessed.
 *
 * @example
 * floorVersion('>=4.5.3') // '4.5.3'
 */
export function floorVersion(range: string): string {
  const match = /^(?:>=|\^|~)?\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(range.trim())
  if (match === null) throw new Error(`peer range ${JSON.stringify(range)}: only >=X, ^X, ~X or X (X = major[.minor[.patch]]) has a floor this check knows`)
  return `${match[1]}.${match[2] ?? 0}.${match[3] ?? 0}`
}

/**
 * The floor of every peer of `manifests` (optional ones too: an app may use them), the highest
 * floor where two packages name one peer, and the companion types of `TYPES_OF_PEER`.
 *
 * @example
 * peerFloors([{ name: '@tidemark/react', peerDependencies: { react: '>=18' } }]) // { react: '18.0.0', '@types/react': '~18.0.0' }
 */
export function peerFloors(manifests: readonly { readonly name: string; readonly peerDependencies?: Readonly<Record<string, string>> }[]): Record<string, string> {
  const floors: Record<string, string> = {}
  const siblings = new Set(manifests.map((m) => m.name))
  for (const manifest of manifests) {
    for (const [peer, range] of Object.entries(manifest.peerDependencies ?? {})) {
      if (siblings.has(peer)) continue
      const floor = floorVersion(range)
      const known = floors[peer]
      if (known === undefined || compareVersions(floor, known) > 0) floors[peer] = floor
    }
  }
  for (const [peer, types] of Object.entries(TYPES_OF_PEER)) {
    const floor = floors[peer]
    if (floor === undefined) continue
    const [major, minor] = floor.split('.')
    for (const name of types) floors[name] = `~${major}.${minor}.0`
  }
  return floors
}

function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number)
  const pb = b.split('.').map(Number)
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}

/**
 * tsc's error lines (with their continuation lines) split into those of the app or a @tidemark
 * package, and a count of those inside other packages' declarations.
 *
 * @example
 * ownErrors('src/app.tsx(3,1): error TS2786: ...\n') // { own: ['src/app.tsx(3,1): error TS2786: ...'], foreign: 0 }
 */
export function ownErrors(output: string): { own: string[]; foreign: number } {
  const own: string[] = []
  let foreign = 0
  let keep = false
  for (const line of output.split('\n')) {
    const error = /^(.+?)\(\d+,\d+\): error TS\d+/.exec(line)
    if (error?.[1] !== undefined) {
      const file = error[1].replaceAll('\\', '/')
      keep = !file.includes('node_modules/') || file.includes('node_modules/@tidemark/')
      if (keep) own.push(line)
      else foreign++
    } else if (keep && line.startsWith(' ')) {
      own[own.length - 1] += `\n${line}`
    } else if (line.startsWith('error ')) {
      own.push(line)
    }
  }
  return { own, foreign }
}

/**
 * `require()` of every entry, from CommonJS in the project: the READMEs say it works on Node
 * 20.19 or later (an entry with a top-level `await` anywhere in its graph would throw
 * `ERR_REQUIRE_ASYNC_MODULE`). Nothing to check on a Node without `require()` of ES modules.
 */
async function requireEntries(browser: readonly Tarball[], project: string): Promise<string[]> {
  if (process.features.require_module !== true) return []
  const specifiers = browser.flatMap((t) => t.pkg.entries.map((e) => (e.subpath === '.' ? t.pkg.name : `${t.pkg.name}/${e.subpath.replace(/^\.\//, '')}`)))
  const script = `for (const s of ${JSON.stringify(specifiers)}) { try { require(s) } catch (e) { console.log(\`\${s}: \${e.code ?? ''} \${String(e.message).split('\\n')[0]}\`) } }`
  const result = await runProcess(process.execPath, ['--input-type=commonjs', '--no-warnings', '-e', script], { cwd: project })
  const failures = result.stdout.split('\n').filter((line) => line !== '')
  if (result.code !== 0) failures.push(`node exited with ${result.signal ?? result.code}: ${result.stderr}`)
  return failures.map((line) => `require(): ${line}`)
}

/** The environment without what `pnpm run` set for the workspace, so the project's pnpm is on its own. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) && !(/^PNPM_/.test(key) && key !== 'PNPM_HOME')))
}

/**
 * Installs the browser `tarballs` with their peers at their floors in a new project in `workDir`
 * and typechecks `peer-floor/src` there.
 *
 * @example
 * const result = await checkPeerFloor(browserTarballs, allTarballs, '/tmp/w')
 * if (result.problems.length > 0) console.log(result.problems.join('\n'))
 */
export async function checkPeerFloor(browser: readonly Tarball[], tarballs: readonly Tarball[], workDir: string): Promise<PeerFloorResult> {
  const project = join(workDir, 'peer-floor')
  mkdirSync(project, { recursive: true })
  cpSync(TEMPLATE, project, { recursive: true })
  const floors = peerFloors(browser.map((t) => t.pkg.manifest))
  const rootDevDependencies = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }).devDependencies
  const dependencies = {
    ...Object.fromEntries(browser.map((t) => [t.pkg.name, `file:${t.file}`])),
    ...floors,
    // Playwright's types (a peer of @tidemark/storm) need Node's.
    '@types/node': rootDevDependencies['@types/node'] ?? '^20.19.0',
  }
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'tidemark-peer-floor', private: true, type: 'module', dependencies }, null, 2)}\n`)
  writeFileSync(join(project, 'pnpm-workspace.yaml'), `overrides:\n${tarballs.map((t) => `  '${t.pkg.name}': 'file:${t.file}'`).join('\n')}\n`)
  const installStarted = performance.now()
  await runOrFail('pnpm', ['install', '--prefer-offline', '--no-frozen-lockfile', '--reporter=append-only', '--config.ignore-scripts=true'], { cwd: project, env: cleanEnv() })
  const installMs = performance.now() - installStarted

  const versions: Record<string, string> = {}
  for (const name of Object.keys(floors)) {
    versions[name] = (JSON.parse(readFileSync(join(project, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version
  }
  const tscStarted = performance.now()
  const tsc = await runProcess(process.execPath, [toolBin('typescript', 'tsc'), '-p', join(project, 'tsconfig.json'), '--pretty', 'false'], { cwd: project })
  const tscMs = performance.now() - tscStarted
  const { own, foreign } = ownErrors(`${tsc.stdout}\n${tsc.stderr}`)
  const problems = own.map((line) => `tsc: ${line}`)
  if (tsc.code !== 0 && own.length === 0 && foreign === 0) problems.push(`tsc exited with ${tsc.signal ?? tsc.code} and no error line:\n${tsc.stdout}${tsc.stderr}`)
  problems.push(...(await requireEntries(browser, project)))
  return { versions, installMs, tscMs, problems, foreignErrors: foreign }
}
