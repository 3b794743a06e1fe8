/**
 * CPU time and resident memory of any process of the benchmark, read from Linux's /proc by PID,
 * so every process (relays, Redis, PostgreSQL, the simulator, the dashboards) is measured the same way and
 * none has to report on itself.
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

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
  const fields = statFields(pid)
  const utime = Number(fields[11])
  const stime = Number(fields[12])
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const rssKb = Number(/^VmRSS:\s+(\d+)\s+kB$/m.exec(status)?.[1] ?? Number.NaN)
  return { cpuMs: ((utime + stime) * 1000) / TICKS_PER_SECOND, rssBytes: rssKb * 1024 }
}

/**
 * A server that forks a process per connection (PostgreSQL: a backend per client, plus its
 * writer, checkpointer and the like): CPU time of the server, of its children still running and
 * of those it has reaped; RSS of the server process alone (its children map its shared memory
 * again, so a sum would count that several times). Throws when the server is gone.
 *
 * @example
 * const { cpuMs } = processTreeUsage(postgres.pid)
 */
export function processTreeUsage(pid: number): ProcessUsage {
  const own = statFields(pid)
  // Fields after the command name: ppid is the 2nd; utime, stime, cutime, cstime the 12th to 15th.
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14])
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let fields: string[]
    try {
      fields = statFields(Number(entry))
    } catch {
      continue // exited since the listing
    }
    if (Number(fields[1]) === pid) ticks += Number(fields[11]) + Number(fields[12])
  }
  return { cpuMs: (ticks * 1000) / TICKS_PER_SECOND, rssBytes: processUsage(pid).rssBytes }
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function statFields(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')
}
