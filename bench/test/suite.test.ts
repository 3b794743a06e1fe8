/**
 * bench/README.md, the commands: `pnpm bench` runs every Node profile, `pnpm bench:stream` the
 * streaming ones, `--only=` the chosen ones (the others keep their previous figures in the
 * report), `--rounds=` and `--warmup=` reach every profile, `--processes=N` runs each in N
 * processes, and `--report-only` runs none.
 */
import { describe, expect, it } from 'vitest'
import type { ProfileFigures } from '../harness/profile.ts'
import { parseSuiteArgs, reportedFigures, SUITE_PROFILES } from '../harness/suite.ts'

const names = (argv: string[]) => parseSuiteArgs(argv).selected.map((p) => p.name)

describe('pnpm bench', () => {
  it('runs every Node profile, each once, by default', () => {
    expect(names([])).toEqual(SUITE_PROFILES.map((p) => p.name))
    expect(parseSuiteArgs([]).processes).toBe(1)
  })

  it('runs the streaming profiles alone with --stream (pnpm bench:stream)', () => {
    expect(names(['--stream'])).toEqual(['streaming-100k', 'streaming-150k-watermark-lag', 'streaming-250k-watermark-lag', 'sliding-1h-1m', 'sessions-100k'])
  })

  it('runs the chosen profiles with --only=, in run order, and refuses a profile it does not know', () => {
    expect(names(['--only=correction-churn'])).toEqual(['correction-churn'])
    expect(names(['--', '--only=anomaly-heavy,correction-churn', '--rounds=9'])).toEqual(['correction-churn', 'anomaly-heavy'])
    expect(() => parseSuiteArgs(['--only=correction-chrun'])).toThrow(/unknown profile correction-chrun; known: streaming-100k/)
  })

  it('passes --rounds=, --warmup= and --no-memory to every profile process, and nothing else', () => {
    expect(parseSuiteArgs(['--only=correction-churn', '--rounds=9', '--warmup=3', '--no-memory', '--processes=3', '--stream']).passThrough).toEqual(['--rounds=9', '--warmup=3', '--no-memory'])
  })

  it('refuses a --rounds or --warmup a profile would refuse, before any profile process starts', () => {
    expect(() => parseSuiteArgs(['--rounds=abc'])).toThrow(new RangeError('--rounds must be a whole number >= 1, got "abc"'))
    expect(() => parseSuiteArgs(['--warmup=x'])).toThrow(/--warmup must be a whole number >= 0/)
  })

  it('runs each profile in N processes with --processes=N, and refuses anything but a whole number from 1', () => {
    expect(parseSuiteArgs(['--processes=3', '--rounds=11']).processes).toBe(3)
    for (const bad of ['--processes=0', '--processes=1.5', '--processes=three']) expect(() => parseSuiteArgs([bad]), bad).toThrow(/--processes must be a whole number >= 1/)
  })

  it('runs no profile with --report-only', () => {
    expect(parseSuiteArgs(['--report-only'])).toMatchObject({ selected: [], reportOnly: true })
  })

  it('reports the profiles it ran with this run\'s figures and the others with their previous ones, in run order', () => {
    const figures = (profile: string, date: string) => ({ profile, date }) as ProfileFigures
    const previous = [figures('anomaly-heavy', 'before'), figures('streaming-100k', 'before'), figures('correction-churn', 'before')]
    const fresh = [figures('correction-churn', 'now')]
    expect(reportedFigures(fresh, previous).map((f) => `${f.profile} ${f.date}`)).toEqual(['streaming-100k before', 'correction-churn now', 'anomaly-heavy before'])
  })
})
