/**
 * CPU time and resident memory of any process of the benchmark, read from Linux's /proc by PID,
 * so every process (relays, Redis, the simulator, the dashboards) is measured the same way and
 * none has to report on itself.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

/** Clock ticks per second of /proc's CPU times. */
const TICKS_PER_SECOND = ((): number => {
  try {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())
    return Number.isFinite(ticks) && ticks > 0 ? ticks : 100
  } catch {
    return 100
  }
})()

/**
 * One reading of a process.
 *
 * @example
 * const usage: ProcessUsage = { cpuMs: 81_230, rssBytes: 312_000_000 }
 */
export interface ProcessUsage {
  /** User + system CPU time since it started (all threads), in ms; resolution one clock tick (10 ms). */
  readonly cpuMs: number
  readonly rssBytes: number
}

/**
 * Reads a process's CPU time and RSS; throws when it is gone.
 *
 * @example
 * const { cpuMs, rssBytes } = processUsage(relay.pid)
 */
export function processUsage(pid: number): ProcessUsage {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const utime = Number(fields[11])
  const stime = Number(fields[12])
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const rssKb = Number(/^VmRSS:\s+(\d+)\s+kB$/m.exec(status)?.[1] ?? Number.NaN)
  return { cpuMs: ((utime + stime) * 1000) / TICKS_PER_SECOND, rssBytes: rssKb * 1024 }
}
