/**
 * bench/README.md: a profile's command line (`--json`, `--only=`, `--rounds=N`, `--warmup=N`,
 * `--no-memory`, `--forced-gc`), its defaults (5 rounds, warm-up 2), a memory run per contender
 * after a priming run and before warm-up, the agreement check that fails a profile whose
 * contenders disagree, and ratios with their min–max over rounds. On a fake clock.
 */
import { describe, expect, it } from 'vitest'
import type { Contender, RunContext, WindowTotals } from '../harness/contender.ts'
import { windowTotalId } from '../harness/contender.ts'
import { NO_PROBE } from '../harness/memory.ts'
import { parseProfileArgs, type ProfileDefinition, type ProfileOptions, poolProcesses, runProfile } from '../harness/profile.ts'
import { type FakeClock, fakeClock } from './fakeClock.ts'

/** What every contender run saw: its name, whether it recorded, whether a heap probe watched it. */
interface RunLog {
  readonly name: string
  readonly record: boolean
  readonly observed: boolean
}

function totals(entries: [string, number, number][]): WindowTotals {
  return new Map(entries.map(([key, count, sum]) => [windowTotalId('w', key, 0), { end: 10, count, sum }]))
}

/**
 * A contender charging `costs[i]` ms on its i-th timed run (the last cost repeating), whose
 * recorded runs report `windows` as their window totals at watermark 10.
 */
function contender(name: string, clock: FakeClock, log: RunLog[], costs: readonly number[], windows: WindowTotals): Contender {
  let timed = 0
  return {
    name,
    label: name,
    run: ({ probe, record }: RunContext) => {
      log.push({ name, record, observed: probe !== NO_PROBE })
      probe.tick()
      if (!record) clock.charge(costs[Math.min(timed++, costs.length - 1)] as number)
      return { end: {}, counts: {}, watermark: 10, ...(record ? { totals: windows } : {}) }
    },
  }
}

function options(clock: FakeClock, argv: readonly string[] = []): ProfileOptions {
  return { ...parseProfileArgs(argv), progress: () => {}, stopwatch: clock.stopwatch }
}

const AGREED = totals([
  ['a', 2, 3],
  ['b', 1, 5],
])

function profile(clock: FakeClock, log: RunLog[], floorWindows: WindowTotals = AGREED, extra: Partial<ProfileDefinition> = {}): ProfileDefinition {
  return {
    name: 'fixture',
    description: 'fixture',
    events: 1_000,
    batches: 2,
    contenders: [contender('tidemark', clock, log, [400], AGREED), contender('plain-loop', clock, log, [200], floorWindows)],
    ratios: [{ name: 'engine/floor', label: 'share of the floor', subject: 'tidemark', reference: 'plain-loop', format: 'percent', target: 0.35 }],
    agree: [['tidemark', 'plain-loop']],
    ...extra,
  }
}

describe('a profile command line', () => {
  it('reads --json, --only=, --rounds=, --warmup=, --no-memory and --forced-gc', () => {
    const parsed = parseProfileArgs(['--json', '--only=tidemark,plain-loop', '--rounds=9', '--warmup=3', '--no-memory', '--forced-gc'])
    expect(parsed).toMatchObject({ json: true, only: ['tidemark', 'plain-loop'], rounds: 9, warmup: 3, memory: false, settleGc: true })
  })

  it('refuses a --rounds or --warmup that is not a whole number (--rounds at least 1), naming the flag', () => {
    expect(() => parseProfileArgs(['--rounds=abc'])).toThrow(new RangeError('--rounds must be a whole number >= 1, got "abc"'))
    expect(() => parseProfileArgs(['--rounds', '0'])).toThrow(new RangeError('--rounds must be a whole number >= 1, got "0"'))
    expect(() => parseProfileArgs(['--rounds=2.5'])).toThrow(/--rounds must be a whole number/)
    expect(() => parseProfileArgs(['--warmup=-1'])).toThrow(new RangeError('--warmup must be a whole number >= 0, got "-1"'))
    expect(() => parseProfileArgs(['--rounds'])).not.toThrow() // no value: the default
    expect(parseProfileArgs(['--warmup=0', '--rounds=1'])).toMatchObject({ warmup: 0, rounds: 1 })
  })

  it('runs every contender, with memory, no forced GC and human-readable output by default', () => {
    expect(parseProfileArgs([])).toMatchObject({ json: false, only: null, rounds: null, warmup: null, memory: true, settleGc: false })
  })
})

describe('a profile run', () => {
  it('takes 5 rounds and a warm-up of 2 by default, and --rounds and --warmup over the profile own', async () => {
    const clock = fakeClock()
    const byDefault = await runProfile(profile(clock, []), options(clock, ['--no-memory']))
    expect([byDefault.rounds, byDefault.warmup]).toEqual([5, 2])
    expect(byDefault.ratios[0]?.perRound).toHaveLength(5)
    const given = await runProfile(profile(clock, [], AGREED, { rounds: 7, warmup: 1 }), options(clock, ['--no-memory', '--rounds=3', '--warmup=4']))
    expect([given.rounds, given.warmup]).toEqual([3, 4])
  })

  it('observes one run per contender for memory, after an unobserved priming run and before warm-up', async () => {
    const clock = fakeClock()
    const log: RunLog[] = []
    const figures = await runProfile(profile(clock, log), options(clock))
    const firstTimed = log.findIndex((r) => !r.record)
    expect(log.slice(0, firstTimed)).toEqual([
      { name: 'tidemark', record: true, observed: false },
      { name: 'tidemark', record: true, observed: true },
      { name: 'plain-loop', record: true, observed: false },
      { name: 'plain-loop', record: true, observed: true },
    ])
    expect(log.slice(firstTimed).every((r) => !r.record && !r.observed)).toBe(true)
    expect(figures.contenders.every((c) => c.memory !== null)).toBe(true)
  })

  it('with --no-memory reports no memory, and still records the runs whose totals must agree', async () => {
    const clock = fakeClock()
    const log: RunLog[] = []
    const figures = await runProfile(profile(clock, log), options(clock, ['--no-memory']))
    expect(figures.contenders.map((c) => c.memory)).toEqual([null, null])
    expect(figures.agreement).toEqual([{ pair: ['tidemark', 'plain-loop'], compared: 2, mismatches: [] }])
  })

  it('fails, before any timed run, when two contenders disagree on a window total', async () => {
    const clock = fakeClock()
    const log: RunLog[] = []
    const wrong = totals([
      ['a', 2, 3],
      ['b', 1, 6],
    ])
    await expect(runProfile(profile(clock, log, wrong), options(clock, ['--no-memory']))).rejects.toThrow(/tidemark and plain-loop disagree on 1 of 2: w\/b\/0/)
    expect(log.some((r) => !r.record)).toBe(false)
  })

  it('fails when either contender misses a window the other fired', async () => {
    const clock = fakeClock()
    const missing = totals([['a', 2, 3]])
    await expect(runProfile(profile(clock, [], missing), options(clock, ['--no-memory']))).rejects.toThrow(/w\/b\/0: end 10, 1\/5 vs missing/)
    const reversed = profile(clock, [], missing, { agree: [['plain-loop', 'tidemark']] })
    await expect(runProfile(reversed, options(clock, ['--no-memory']))).rejects.toThrow(/w\/b\/0: missing vs 1\/5/)
  })

  it('with --only runs the named contenders alone, and checks no pair that lacks one', async () => {
    const clock = fakeClock()
    const log: RunLog[] = []
    const figures = await runProfile(profile(clock, log, totals([])), options(clock, ['--no-memory', '--only=tidemark']))
    expect(new Set(log.map((r) => r.name))).toEqual(new Set(['tidemark']))
    expect(figures.contenders.map((c) => c.name)).toEqual(['tidemark'])
    expect(figures.agreement).toEqual([])
  })

  it('gives a ratio as the reference median over the subject median, with the min–max of the per-round ratios, and marks its target', async () => {
    const clock = fakeClock()
    const log: RunLog[] = []
    const definition: ProfileDefinition = {
      ...profile(clock, log),
      contenders: [
        // Warm-up takes 3 runs of 400 ms and 5 of 200 ms (1 s of CPU each); the five timed rounds follow.
        contender('tidemark', clock, log, [400, 400, 400, 500, 400, 400, 500, 600], AGREED),
        contender('plain-loop', clock, log, [200, 200, 200, 200, 200, 200, 200, 200, 200, 600], AGREED),
      ],
    }
    const figures = await runProfile(definition, options(clock, ['--no-memory']))
    const ratio = figures.ratios[0]
    expect(figures.contenders.map((c) => c.timeMs.runs)).toEqual([
      [500, 400, 400, 500, 600],
      [200, 200, 200, 200, 600],
    ])
    expect(ratio?.perRound).toEqual([0.4, 0.5, 0.5, 0.4, 1])
    expect(ratio?.median).toBe(0.4) // median 200 / median 500
    expect([ratio?.min, ratio?.max]).toEqual([0.4, 1])
    expect(ratio?.meetsTarget).toBe(true)
    expect(figures.contenders[0]?.eventsPerSec).toBe(2_000) // 1,000 events in 500 ms of CPU
  })

  it('pools the rounds of several processes into one set of figures (--processes=N)', async () => {
    const clock = fakeClock()
    const one = await runProfile(profile(clock, []), options(clock, ['--no-memory', '--rounds=3']))
    const pooled = poolProcesses([one, one, one])
    expect(pooled.processes).toBe(3)
    expect(pooled.rounds).toBe(9)
    expect(pooled.ratios[0]?.perRound).toHaveLength(9)
    expect(pooled.contenders[0]?.timeMs.runs).toHaveLength(9)
  })
})
