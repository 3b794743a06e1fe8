/**
 * The lock of a PGlite data directory held by one process at a time, also when several start at
 * the same instant on a new directory or on one whose lock a dead process left.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { removeDataDirs, tempDir } from './support/dataDirs.ts'

afterAll(() => removeDataDirs())

const CHILD = fileURLToPath(new URL('./support/lockChild.ts', import.meta.url))

function contender(dir: string, at: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, dir, String(at)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
    })
    child.on('error', reject)
    child.on('close', () => resolve(out.trim()))
  })
}

it.each([
  ['a new directory', false],
  ['a directory whose lock a dead process left', true],
])('three processes starting at once on %s: exactly one holds the lock', async (_, stale) => {
  for (let trial = 0; trial < 3; trial++) {
    const dir = join(tempDir('lock-race'), 'data')
    if (stale) {
      mkdirSync(dir, { recursive: true })
      // A process id no process has (above Linux's pid_max of 2^22).
      writeFileSync(`${dir}.lock`, '99999999\n')
    }
    // Far enough ahead for every contender to have started (tsx takes most of a second).
    const at = Date.now() + 2_000
    const outcomes = await Promise.all([contender(dir, at), contender(dir, at), contender(dir, at)])
    expect(outcomes.sort(), `trial ${trial}`).toEqual(['OK', 'REFUSED', 'REFUSED'])
  }
}, 60_000)
