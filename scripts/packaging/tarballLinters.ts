/**
 * The two published-package linters, run on a tarball exactly as a registry would serve it:
 * publint (`--strict`: its warnings fail too) checks the manifest against the files, and
 * Are the Types Wrong (`--profile esm-only`) checks that TypeScript resolves the same files
 * Node and bundlers do. The esm-only profile skips the CommonJS resolutions (node10 and
 * require from node16), which an ESM-only package cannot serve types to by design.
 */
import { toolBin } from './toolBin.ts'
import { type ProcessResult, runProcess } from './runProcess.ts'

/** One linter's verdict on one tarball. */
export interface LintResult {
  readonly linter: 'publint' | 'attw'
  readonly ok: boolean
  /** What the linter printed when it failed or had something to say (suggestions), else ''. */
  readonly output: string
  readonly ms: number
}

const PUBLINT_CLEAN = /All good!/

/**
 * Runs publint --strict on a tarball.
 *
 * @example
 * const { ok, output } = await publintTarball('/tmp/t/tidemark-engine-0.1.0.tgz', process.cwd())
 */
export async function publintTarball(file: string, cwd: string): Promise<LintResult> {
  const result = await runProcess(process.execPath, [toolBin('publint', 'publint'), 'run', file, '--strict', '--level', 'suggestion'], { cwd })
  const output = textOf(result)
  return { linter: 'publint', ok: result.code === 0, output: result.code === 0 && PUBLINT_CLEAN.test(output) ? '' : output, ms: result.ms }
}

/**
 * Runs attw with the esm-only profile on a tarball.
 *
 * @example
 * const { ok, output } = await attwTarball('/tmp/t/tidemark-engine-0.1.0.tgz', process.cwd())
 */
export async function attwTarball(file: string, cwd: string): Promise<LintResult> {
  const args = [toolBin('@arethetypeswrong/cli', 'attw'), file, '--profile', 'esm-only', '--format', 'ascii', '--no-emoji', '--no-color']
  const result = await runProcess(process.execPath, args, { cwd })
  return { linter: 'attw', ok: result.code === 0, output: result.code === 0 ? '' : textOf(result), ms: result.ms }
}

function textOf(result: ProcessResult): string {
  return `${result.stdout}${result.stderr}`.trim()
}
