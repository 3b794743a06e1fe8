/**
 * `pnpm build`: builds every public package into its dist/ (ESM, .d.ts, source maps,
 * declaration maps) with the package's own `build` script (`tsc -p tsconfig.build.json`),
 * after emptying dist/ so no file of a deleted or renamed module is left to be packed.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { boundedParallel } from './boundedParallel.ts'
import { type PublicPackage, publicPackages } from './publicPackages.ts'
import { runOrFail } from './runProcess.ts'

/** How long one package took to build. */
export interface BuildTiming {
  readonly name: string
  readonly ms: number
}

/**
 * Empties and rebuilds each package's dist/, two at a time; rejects with the compiler's
 * output when a build fails.
 *
 * @example
 * const timings = await buildPackages(publicPackages())
 */
export async function buildPackages(packages: readonly PublicPackage[]): Promise<BuildTiming[]> {
  return boundedParallel(packages, 2, async (pkg) => {
    if (pkg.manifest.scripts?.build === undefined) throw new Error(`${pkg.name}: package.json has no "build" script`)
    rmSync(join(pkg.dir, 'dist'), { recursive: true, force: true })
    const { ms } = await runOrFail('pnpm', ['run', '--silent', 'build'], { cwd: pkg.dir })
    return { name: pkg.name, ms }
  })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const timings = await buildPackages(publicPackages())
  for (const { name, ms } of timings) console.log(`built ${name.padEnd(20)} ${(ms / 1000).toFixed(2)} s`)
}
