/**
 * The lock of a PGlite data directory held by one process at a time, also when several start at
 * the same instant on a new directory or on one whose lock a dead process left.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { lockDataDir } from '../src/store/dataDirLock.ts'
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

/** A process that runs throughout the test (the one that started this worker), its boot and its start time as /proc says. */
function liveProcess(): { pid: number; boot: string; start: string } {
  const pid = process.ppid
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] as string
  return { pid, boot: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(), start }
}

it.each([
  ['its process, as it started', 'refused', (p: ReturnType<typeof liveProcess>) => `${p.pid}\n${p.boot}\n${p.start}\n`],
  ['only a process id that runs (a lock of an older relay)', 'refused', (p: ReturnType<typeof liveProcess>) => `${p.pid}\n`],
  ['a process id that runs, started at another time (the id was reused)', 'taken over', (p: ReturnType<typeof liveProcess>) => `${p.pid}\n${p.boot}\n${Number(p.start) + 1}\n`],
  ['a process id that runs, on an earlier boot (the machine or container restarted)', 'taken over', (p: ReturnType<typeof liveProcess>) => `${p.pid}\n00000000-0000-0000-0000-000000000000\n${p.start}\n`],
])('a lock naming %s is %s', (_, outcome, text) => {
  const dir = join(tempDir('lock-holder'), 'data')
  mkdirSync(dir, { recursive: true })
  const holder = liveProcess()
  writeFileSync(`${dir}.lock`, text(holder))
  if (outcome === 'refused') {
    expect(() => lockDataDir(dir)).toThrow(`in use by process ${holder.pid}`)
    return
  }
  const release = lockDataDir(dir)
  expect(readFileSync(`${dir}.lock`, 'utf8').split('\n')[0]).toBe(String(process.pid))
  release()
  expect(() => readFileSync(`${dir}.lock`)).toThrow('ENOENT')
})
