/**
 * The whole machine's CPU time from /proc/stat: what every process used, this run's and
 * everybody else's, and the time cores sat waiting on disk. On a machine shared with other work
 * it says how much of the cores the benchmark could have had.
 */
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'

/** Clock ticks per second of /proc/stat (USER_HZ, 100 on Linux). */
const USER_HZ = 100

/**
 * CPU time of all cores since boot, in ms.
 *
 * @example
 * const sample: MachineCpu = { busyMs: 1_200_000, idleMs: 800_000, iowaitMs: 90_000, stealMs: 0 }
 */
export interface MachineCpu {
  /** user + nice + system + irq + softirq + steal. */
  readonly busyMs: number
  readonly idleMs: number
  /** Idle time with I/O outstanding (a core free, a process waiting on disk). */
  readonly iowaitMs: number
  /** Time the hypervisor gave this machine's cores to another. */
  readonly stealMs: number
}

/**
 * Reads the machine's CPU counters.
 *
 * @example
 * const before = machineCpu()
 * // … later: busy share of 2 cores = (after.busyMs - before.busyMs) / (2 × elapsed ms)
 */
export function machineCpu(): MachineCpu {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? ''
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number)
  const ms = (ticks: number): number => (ticks * 1000) / USER_HZ
  return { busyMs: ms(user + nice + system + irq + softirq + steal), idleMs: ms(idle), iowaitMs: ms(iowait), stealMs: ms(steal) }
}

/**
 * The machine's 1-minute load average, to two decimals: what the run's figures were measured under.
 *
 * @example
 * loadAverage() // 2.41
 */
export function loadAverage(): number {
  return Number((loadavg()[0] as number).toFixed(2))
}
