/**
 * Finds the script behind a tool's command (publint, attw, tsc, vite) among a project's
 * dependencies, so it runs as `node <script>` directly: no shell shim, no `pnpm exec` start-up,
 * and the pid is the tool's own.
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { repoRoot } from './publicPackages.ts'

/**
 * Absolute path of the script `bin` names in package `packageName`, as installed in
 * `root`/node_modules (default: the repository root).
 *
 * @example
 * spawn(process.execPath, [toolBin('publint', 'publint'), 'run', tarball, '--strict'])
 */
export function toolBin(packageName: string, bin: string, root: string = repoRoot): string {
  // pnpm links a project's direct dependencies into its node_modules/; their exports may not expose package.json.
  const manifestFile = join(root, 'node_modules', packageName, 'package.json')
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { bin?: string | Record<string, string> }
  const target = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[bin]
  if (target === undefined) throw new Error(`${packageName} has no "${bin}" command (package.json bin)`)
  return join(dirname(manifestFile), target)
}
