/**
 * `pnpm test:packages`: everything between the unit tests and the browser tests that a
 * release of the public packages needs, on the packages as users get them.
 *
 *   1. manifests   package.json rules for every public package (manifestRules.ts)
 *   2. build       empty dist/, then each package's build (tsc: ESM, .d.ts, maps)
 *   3. pack        pnpm pack into a temporary folder
 *   4. contents    each tarball's files, maps and manifest (tarballContents.ts), and the
 *                  packages its built code imports are declared (declaredImports.ts)
 *   5. lint        publint --strict and attw --profile esm-only on each tarball
 *   6. size        gzipped size against size-budget.json (sizeBudget.ts says what is measured),
 *                  for the packages a browser app bundles
 *   7. bin         each Node-only package (nodePackages.ts): its tarball installed in a new
 *                  project outside the workspace, its command run, its ready line read, its
 *                  health path fetched, stopped with SIGTERM (binSmoke.ts)
 *   8. peer floor  the browser packages' tarballs installed in a new project outside the
 *                  workspace with every peer at the lowest version its range allows (React 18.0
 *                  with its types, zustand, Yjs, y-protocols, Playwright), and a small app over
 *                  all of them typechecked (peerFloor.ts, peer-floor/)
 *   9. consumer    the browser packages' tarballs installed in a fresh Vite + React app outside
 *                  the workspace, typechecked, built, opened in two Chromium tabs, and run from
 *                  Node (e2e/consumer/, also `pnpm test:consumer`)
 *
 * The checks (1, 4, 5, 6, 7, 8) all run even when one fails, so one run shows every problem; build
 * and pack failures stop the run. `--skip-consumer` leaves out step 9. The temporary folder
 * is removed at the end, on failure and on Ctrl-C. Exit code 1 when any step failed.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { smokeBin } from './binSmoke.ts'
import { boundedParallel } from './boundedParallel.ts'
import { buildPackages } from './buildPackages.ts'
import { declaredImports } from './declaredImports.ts'
import { manifestProblems } from './manifestRules.ts'
import { isNodePackage, NODE_PACKAGES } from './nodePackages.ts'
import { packTarballs, type Tarball } from './packTarballs.ts'
import { checkPeerFloor } from './peerFloor.ts'
import { type PackageManifest, packagesFolder, publicPackages, repoRoot } from './publicPackages.ts'
import { runOrFail, runProcess } from './runProcess.ts'
import { IMPORT_BUDGET_FILE, importTable, measureImport, measurePackage, readBudgets, readImportBudgets, SIZE_DEFINITION, sizeTable, withinBudget } from './sizeBudget.ts'
import { tarballProblems } from './tarballContents.ts'
import { attwTarball, publintTarball } from './tarballLinters.ts'
import { toolBin } from './toolBin.ts'

interface StepOutcome {
  readonly name: string
  readonly ok: boolean
  readonly seconds: number
}

const outcomes: StepOutcome[] = []
const workDir = mkdtempSync(join(tmpdir(), 'tidemark-packages-'))
let consumerPid: number | undefined

async function step(name: string, body: () => Promise<boolean>): Promise<boolean> {
  console.log(`\n=== packages: ${name}`)
  const started = performance.now()
  let ok: boolean
  try {
    ok = await body()
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error))
    ok = false
  }
  outcomes.push({ name, ok, seconds: (performance.now() - started) / 1000 })
  return ok
}

function report(lines: readonly string[]): boolean {
  for (const line of lines) console.log(line)
  return true
}

function cleanUp(): void {
  rmSync(workDir, { recursive: true, force: true })
}

/** Resolves once `pid` is gone, or after `ms`. */
async function exited(pid: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0)
    } catch {
      return
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

let interrupted = false
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return
    interrupted = true
    void (async () => {
      // Playwright stops on SIGINT and runs its teardown (the consumer app's server and folder).
      if (consumerPid !== undefined) {
        try {
          process.kill(consumerPid, 'SIGINT')
        } catch {
          // It has exited already.
        }
        await exited(consumerPid, 15_000)
      }
      cleanUp()
      process.exit(130)
    })()
  })
}

async function main(): Promise<void> {
  const skipConsumer = process.argv.includes('--skip-consumer')
  const packages = publicPackages()
  const budgets = readBudgets(repoRoot)
  console.log(`public packages: ${packages.map((p) => `${p.name}@${p.version}`).join(', ')}`)
  if (packages.length === 0) throw new Error('no public package under packages/: nothing would be checked')

  await step('manifests', async () => {
    const privateNames = new Set(packagesFolder().filter((p) => p.manifest.private === true).map((p) => p.name))
    let ok = true
    for (const pkg of packages) {
      const problems = manifestProblems(pkg, repoRoot, budgets, privateNames)
      ok &&= problems.length === 0
      report(problems.length === 0 ? [`ok   ${pkg.name}`] : [`FAIL ${pkg.name}`, ...problems.map((p) => `     - ${p}`)])
    }
    return ok
  })

  const built = await step('build', async () => {
    for (const { name, ms } of await buildPackages(packages)) console.log(`built ${name.padEnd(20)} ${(ms / 1000).toFixed(2)} s`)
    return true
  })
  if (!built) return

  const tarballDir = join(workDir, 'tarballs')
  let tarballs: Tarball[] = []
  const packed = await step('pack', async () => {
    tarballs = await packTarballs(packages, tarballDir)
    for (const t of tarballs) console.log(`packed ${t.file} (${t.files.length} files)`)
    return true
  })
  if (!packed) return

  await step('contents', async () => {
    let ok = true
    for (const tarball of tarballs) {
      const extracted = join(workDir, 'extracted', tarball.pkg.name.replace('/', '+'))
      mkdirSync(extracted, { recursive: true })
      await runOrFail('tar', ['-xzf', tarball.file, '-C', extracted], { cwd: workDir })
      const root = join(extracted, 'package')
      const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as PackageManifest
      const imports = await declaredImports(tarball.pkg, root, manifest)
      const problems = [...tarballProblems(tarball, root), ...imports.problems]
      ok &&= problems.length === 0
      const summary = `${tarball.files.length} files, ${imports.modules} modules walked, imports: ${imports.imported.join(', ') || 'nothing'}`
      report(problems.length === 0 ? [`ok   ${tarball.pkg.name}: ${summary}`] : [`FAIL ${tarball.pkg.name}: ${summary}`, ...problems.map((p) => `     - ${p}`)])
    }
    return ok
  })

  await step('lint (publint --strict, attw --profile esm-only)', async () => {
    const jobs = tarballs.flatMap((t) => [
      { tarball: t, run: () => publintTarball(t.file, workDir) },
      { tarball: t, run: () => attwTarball(t.file, workDir) },
    ])
    const results = await boundedParallel(jobs, 2, async (job) => ({ name: job.tarball.pkg.name, result: await job.run() }))
    for (const { name, result } of results) {
      console.log(`${result.ok ? 'ok  ' : 'FAIL'} ${result.linter.padEnd(7)} ${name}`)
      if (result.output !== '') console.log(result.output.replace(/^/gm, '     '))
    }
    return results.every(({ result }) => result.ok)
  })

  await step('size (gzip, budgets in scripts/packaging/size-budget.json and import-budgets.json)', async () => {
    const browser = packages.filter((pkg) => !isNodePackage(pkg))
    const sizes = await boundedParallel(browser, 2, (pkg) => measurePackage(pkg, budgets[pkg.name]))
    const skipped = packages.filter(isNodePackage).map((pkg) => pkg.name)
    const imports = await Promise.all(
      readImportBudgets(repoRoot).map((budget) => {
        const pkg = browser.find((candidate) => candidate.name === budget.package)
        if (pkg === undefined) throw new Error(`${IMPORT_BUDGET_FILE}: ${budget.package} is not a browser package of this workspace`)
        return measureImport(pkg, budget)
      }),
    )
    report([
      ...SIZE_DEFINITION,
      ...(skipped.length === 0 ? [] : [`Node-only, not measured: ${skipped.join(', ')}`]),
      '',
      ...sizeTable(sizes),
      '',
      `Tree-shaken imports (budgets in ${IMPORT_BUDGET_FILE}):`,
      ...importTable(imports),
    ])
    return sizes.every(withinBudget) && imports.every((size) => size.gzip <= size.budget)
  })

  await step('bin (Node-only packages: tarball installed in a new project, command run, health path fetched)', async () => {
    let ok = true
    for (const tarball of tarballs) {
      const smoke = NODE_PACKAGES[tarball.pkg.name]
      if (smoke === undefined) continue
      const result = await smokeBin(tarball, tarballs, smoke, workDir)
      ok &&= result.problems.length === 0
      report([
        `${result.problems.length === 0 ? 'ok  ' : 'FAIL'} ${result.name}: installed in ${(result.installMs / 1000).toFixed(1)} s; ${result.bin} ready on 127.0.0.1:${result.port} after ${(result.readyMs / 1000).toFixed(1)} s; ` +
          `GET ${smoke.probe} ${result.probe.status} ${JSON.stringify(result.probe.body)}; SIGTERM: exit ${result.exit.signal ?? result.exit.code}`,
        ...result.problems.map((p) => `     - ${p}`),
      ])
    }
    return ok
  })

  await step('peer floor (browser tarballs with the lowest peer versions their ranges allow, tsc)', async () => {
    const result = await checkPeerFloor(tarballs.filter((t) => !isNodePackage(t.pkg)), tarballs, workDir)
    const versions = Object.entries(result.versions).map(([name, version]) => `${name}@${version}`)
    report([
      `${result.problems.length === 0 ? 'ok  ' : 'FAIL'} ${versions.join(', ')}: installed in ${(result.installMs / 1000).toFixed(1)} s, tsc ${(result.tscMs / 1000).toFixed(1)} s` +
        (result.foreignErrors === 0 ? '' : ` (${result.foreignErrors} errors inside other packages' declarations left out)`),
      ...result.problems.map((p) => `     - ${p}`),
    ])
    return result.problems.length === 0
  })

  if (skipConsumer) return
  await step('consumer (fresh app from the tarballs, Chromium, Node)', async () => {
    const args = [toolBin('@playwright/test', 'playwright'), 'test', '-c', 'e2e/consumer/playwright.config.ts']
    const env = { ...process.env, TIDEMARK_TARBALLS: tarballDir }
    const result = await runProcess(process.execPath, args, { cwd: repoRoot, env, echo: true, onStart: (pid) => (consumerPid = pid) })
    consumerPid = undefined
    return result.code === 0
  })
}

try {
  await main()
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error))
  outcomes.push({ name: 'setup', ok: false, seconds: 0 })
} finally {
  cleanUp()
}

console.log('\n=== packages: summary')
for (const o of outcomes) console.log(`  ${(o.ok ? 'ok' : 'FAILED').padEnd(7)} ${o.name.padEnd(56)} ${o.seconds.toFixed(1)} s`)
const total = outcomes.reduce((sum, o) => sum + o.seconds, 0)
const failed = outcomes.filter((o) => !o.ok)
console.log(failed.length === 0 ? `packages: all passed in ${total.toFixed(1)} s` : `packages: FAILED: ${failed.map((o) => o.name).join('; ')}`)
process.exitCode = failed.length === 0 ? 0 : 1
