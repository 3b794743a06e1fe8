/**
 * Starts one profile in its own Node process, so its heap figures are its own:
 * `node --expose-gc --import tsx --conditions=@tidemark/source bench/<profile>.ts --json ...`.
 * The child's progress (stderr) is relayed line by line; its figures are the last stdout line.
 */
import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ProfileFigures } from './profile.ts'

export const BENCH_DIR = dirname(dirname(fileURLToPath(import.meta.url)))
export const REPO_DIR = dirname(BENCH_DIR)
export const RESULTS_DIR = join(BENCH_DIR, 'results')

export interface ChildRun {
  readonly figures: ProfileFigures | null
  readonly code: number
  /** Last lines of stderr, for the report when the child failed. */
  readonly tail: string
  readonly ms: number
}

export function runProfileProcess(
  profile: string,
  args: readonly string[],
  onLine: (line: string) => void,
  nodeFlags: readonly string[] = [],
): Promise<ChildRun> {
  const started = performance.now()
  const child = spawn(
    process.execPath,
    [...nodeFlags, '--expose-gc', '--import', 'tsx', '--conditions=@tidemark/source', join('bench', `${profile}.ts`), '--json', ...args],
    { cwd: REPO_DIR, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let stdout = ''
  let partial = ''
  const tail: string[] = []
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk: string) => {
    stdout += chunk
  })
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) {
      onLine(line)
      tail.push(line)
      if (tail.length > 12) tail.shift()
    }
  })
  return new Promise((resolve) => {
    child.on('close', (code) => {
      if (partial !== '') {
        onLine(partial)
        tail.push(partial)
      }
      const last = stdout.trim().split('\n').pop() ?? ''
      let figures: ProfileFigures | null = null
      if (code === 0 && last.startsWith('{')) figures = JSON.parse(last) as ProfileFigures
      resolve({ figures, code: code ?? 1, tail: tail.join('\n'), ms: performance.now() - started })
    })
  })
}
