/**
 * Packs public packages the way they are published: `pnpm pack` rewrites `workspace:^` to the
 * sibling's version and keeps only the `files` listed. Packing expects a fresh build
 * (`buildPackages`); the packages' `prepack` build is skipped here so it does not run twice.
 */
import { mkdirSync } from 'node:fs'
import { boundedParallel } from './boundedParallel.ts'
import type { PublicPackage } from './publicPackages.ts'
import { runOrFail } from './runProcess.ts'

/** One packed package. */
export interface Tarball {
  readonly pkg: PublicPackage
  /** Absolute path of the .tgz. */
  readonly file: string
  /** Paths inside the tarball, relative to its `package/` folder. */
  readonly files: readonly string[]
}

interface PackJson {
  readonly filename: string
  readonly files: readonly { readonly path: string }[]
}

/**
 * Packs each package into `destination` (created if missing), two at a time.
 *
 * @example
 * const tarballs = await packTarballs(publicPackages(), '/tmp/tidemark-tarballs')
 */
export async function packTarballs(packages: readonly PublicPackage[], destination: string): Promise<Tarball[]> {
  mkdirSync(destination, { recursive: true })
  return boundedParallel(packages, 2, async (pkg) => {
    const { stdout } = await runOrFail('pnpm', ['--config.ignore-scripts=true', 'pack', '--pack-destination', destination, '--json'], {
      cwd: pkg.dir,
    })
    let packed: PackJson
    try {
      packed = JSON.parse(stdout.slice(stdout.indexOf('{'))) as PackJson
    } catch (error) {
      throw new Error(`${pkg.name}: could not read the output of pnpm pack --json (${(error as Error).message}):\n${stdout}`)
    }
    return { pkg, file: packed.filename, files: packed.files.map((f) => f.path).sort() }
  })
}
