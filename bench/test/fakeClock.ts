/**
 * A clock the tests advance by hand: a contender "costs" what it charges, and the stopwatch reads
 * the charges, so the harness's rules are checked without timing anything.
 */
import type { Sample, Stopwatch } from '../measure.ts'

export interface FakeClock {
  /** Charge `cpuMs` of CPU time (and `wallMs` of wall time, the same unless given). */
  charge(cpuMs: number, wallMs?: number): void
  readonly stopwatch: Stopwatch
}

export function fakeClock(): FakeClock {
  let cpu = 0
  let wall = 0
  return {
    charge(cpuMs, wallMs = cpuMs) {
      cpu += cpuMs
      wall += wallMs
    },
    stopwatch(fn): Sample {
      const cpu0 = cpu
      const wall0 = wall
      fn()
      return { cpuMs: cpu - cpu0, wallMs: wall - wall0 }
    },
  }
}
