/**
 * What a benchmark measured, for its record: HEAD, and how many files under the measured paths
 * differ from it (read-only git queries).
 */
import { execFileSync } from 'node:child_process'
import { REPO_DIR } from './child.ts'

/**
 * HEAD's short hash, with the count of uncommitted files under `paths` when there are any.
 * `TIDEMARK_ENGINE_REF` names the revision when running from an export without .git; without
 * either, the answer says why git could not tell.
 *
 * @example
 * measuredRevision(['packages/engine']) // 'a9b3757' or 'a9b3757 + 2 uncommitted file(s) in packages/engine'
 */
export function measuredRevision(paths: readonly string[]): string {
  const given = process.env.TIDEMARK_ENGINE_REF
  if (given !== undefined && given !== '') return given
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: REPO_DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim()
    const head = git('rev-parse', '--short', 'HEAD')
    const dirty = git('status', '--porcelain', '--', ...paths).split('\n').filter(Boolean).length
    return dirty === 0 ? head : `${head} + ${dirty} uncommitted file(s) in ${paths.join(', ')}`
  } catch (error) {
    return `unknown (git: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]})`
  }
}
