/**
 * bench/README.md, "How it measures": warm-up (at least `--warmup` runs and 1 s of CPU time, at
 * most 200 runs, interleaved), interleaved rounds (A B C, B C A, ...), short contenders repeated
 * inside a sample, and the robust spread (MAD × 1.4826 / median).
 */
import { describe, expect, it } from 'vitest'
import { spreadOf, type TimedRun, timedRounds, WARM_CPU_MS, warmUp } from '../measure.ts'
import { fakeClock } from './fakeClock.ts'

/** Contenders that charge the fake clock `costs[name]` ms per run and log their runs in order. */
function contenders(costs: Record<string, number>) {
  const clock = fakeClock()
  const log: string[] = []
  const runs: TimedRun[] = Object.entries(costs).map(([name, ms]) => ({
    name,
    run: () => {
      log.push(name)
      clock.charge(ms)
    },
  }))
  const count = (name: string) => log.filter((n) => n === name).length
  return { clock, log, runs, count }
}

describe('warm-up', () => {
  it('runs every contender at least --warmup times and until it has spent 1 s of CPU time', async () => {
    expect(WARM_CPU_MS).toBe(1_000)
    const { clock, runs, count } = contenders({ engine: 40, floor: 600 })
    await warmUp(runs, 2, undefined, undefined, undefined, undefined, clock.stopwatch)
    expect(count('engine')).toBe(25) // 25 × 40 ms = 1 s
    expect(count('floor')).toBe(2) // 2 × 600 ms: the count and the second both met
  })

  it('runs more than 1 s when --warmup asks for more runs', async () => {
    const { clock, runs, count } = contenders({ slow: 600 })
    await warmUp(runs, 5, undefined, undefined, undefined, undefined, clock.stopwatch)
    expect(count('slow')).toBe(5)
  })

  it('stops a contender whose runs cost next to nothing after 200 runs', async () => {
    const { clock, runs, count } = contenders({ tiny: 0.001 })
    await warmUp(runs, 2, undefined, undefined, undefined, undefined, clock.stopwatch)
    expect(count('tiny')).toBe(200)
  })

  it('interleaves the contenders, then leaves the warm ones out', async () => {
    const { clock, log, runs } = contenders({ a: 500, b: 250 })
    await warmUp(runs, 2, undefined, undefined, undefined, undefined, clock.stopwatch)
    expect(log).toEqual(['a', 'b', 'a', 'b', 'b', 'b'])
  })

  it('repeats a contender much shorter than 150 ms inside a sample, as often as fills 150 ms (at most 50)', async () => {
    const { clock, runs } = contenders({ floor: 10, engine: 200, blink: 1 })
    const reps = await warmUp(runs, 2, undefined, undefined, undefined, undefined, clock.stopwatch)
    expect(Object.fromEntries(reps)).toEqual({ floor: 15, engine: 1, blink: 50 })
  })
})

describe('timed rounds', () => {
  it('rotates the order every round: A B C, B C A, C A B', async () => {
    const { clock, log, runs } = contenders({ A: 200, B: 200, C: 200 })
    const reps = new Map([
      ['A', 1],
      ['B', 1],
      ['C', 1],
    ])
    await timedRounds(runs, 3, reps, undefined, undefined, clock.stopwatch)
    expect(log.join(' ')).toBe('A B C B C A C A B')
  })

  it('gives one sample per round, divided by the repetitions inside it', async () => {
    const { clock, runs, count } = contenders({ floor: 10, engine: 200 })
    const reps = new Map([
      ['floor', 15],
      ['engine', 1],
    ])
    const samples = await timedRounds(runs, 5, reps, undefined, undefined, clock.stopwatch)
    expect(count('floor')).toBe(75)
    expect(samples.get('floor')?.map((s) => s.cpuMs)).toEqual([10, 10, 10, 10, 10])
    expect(samples.get('engine')?.map((s) => s.cpuMs)).toEqual([200, 200, 200, 200, 200])
  })
})

describe('spread', () => {
  it('is the median and MAD × 1.4826 / median, which one outlier does not move', () => {
    const s = spreadOf([10, 11, 9, 10, 100])
    expect(s.median).toBe(10)
    expect(s.min).toBe(9)
    expect(s.max).toBe(100)
    expect(s.relSpread).toBeCloseTo((1 * 1.4826) / 10, 10)
  })
})
