/**
 * bench/README.md, "Comparing builds": a build directory needs a package.json saying
 * `{"type":"module"}`; without it tsx loads the copy as CommonJS, and compare-builds refuses it.
 * Runs the command itself (tsx, as the README gives it); the build is refused before any
 * profile runs.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { REPO_DIR } from '../harness/child.ts'

const dir = mkdtempSync(join(tmpdir(), 'tidemark-compare-builds-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A directory holding an `index.js` that exports `createEngine`, with or without `{"type":"module"}`. */
function build(name: string, typeModule: boolean): string {
  const path = join(dir, name)
  mkdirSync(path)
  writeFileSync(join(path, 'index.js'), 'export function createEngine() {\n  throw new Error("not run")\n}\n')
  if (typeModule) writeFileSync(join(path, 'package.json'), '{"type":"module"}\n')
  return path
}

function compareBuilds(...builds: string[]) {
  return spawnSync(
    process.execPath,
    ['--import', 'tsx', '--conditions=@tidemark/source', 'bench/compare-builds.ts', '--profile=streaming-100k', `--builds=${builds.join(',')}`, '--processes=1', '--rounds=1'],
    { cwd: REPO_DIR, encoding: 'utf8' },
  )
}

describe('compare-builds', () => {
  it('refuses a build without a package.json saying {"type":"module"}, naming the file to add', () => {
    const esm = build('esm', true)
    const commonJs = build('common-js', false)
    const result = compareBuilds(esm, commonJs)
    expect(result.status).not.toBe(0)
    expect(result.stderr).toContain(`${commonJs}/index.js was loaded as CommonJS, not as an ES module: add ${commonJs}/package.json with {"type":"module"}`)
    expect(result.stderr, 'refused before a process is spawned').not.toContain('process 1 failed')
  }, 30_000)
})
