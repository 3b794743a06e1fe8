/**
 * bench/README.md, "The guard": `pnpm bench:check` runs streaming-150k-watermark-lag (Tidemark
 * and the floor only, 12 rounds) and compares Tidemark's share of the floor with baseline.json;
 * tolerance 3 × the combined standard error and between-process spread, within 5–35%; a low
 * result is re-measured once in a fresh process; with Tidemark's wall time above 1.25× its CPU
 * time a low result is INCONCLUSIVE (exit 0) unless `--strict`; exit 1 on a regression; the
 * last line states the ratio; `--update` measures the baseline in 3 processes.
 */
import { describe, expect, it } from 'vitest'
import type { ChildRun } from '../harness/child.ts'
import { checkGuard, GUARD_ARGS, GUARD_PROFILE, type GuardBaseline, type GuardSample, guardSample, guardTolerance, measureBaseline } from '../harness/guard.ts'
import type { ProfileFigures } from '../harness/profile.ts'
import { parseProfileArgs } from '../harness/profile.ts'

const BASELINE: GuardBaseline = {
  profile: GUARD_PROFILE,
  metric: 'ratio',
  ratio: 0.4,
  relSpread: 0.03,
  rounds: 12,
  contention: 0.97,
  betweenProcesses: 0.02,
  processes: 3,
  date: '2026-12-01T00:00:00.000Z',
  node: 'v20.20.2',
  cpu: 'Test CPU × 2',
  load: 0.5,
}

const sample = (ratio: number, contention = 1): GuardSample => ({ ratio, contention, relSpread: 0.03, rounds: 12 })

/** Measurements served in order, each labelled as the guard asked for it. */
function measurements(...samples: GuardSample[]) {
  const labels: string[] = []
  const measure = async (label: string) => {
    labels.push(label)
    const next = samples.shift()
    if (next === undefined) throw new Error(`no measurement left for ${label}`)
    return next
  }
  return { labels, measure }
}

async function check(strict: boolean, ...samples: GuardSample[]) {
  const { labels, measure } = measurements(...samples)
  const lines: string[] = []
  const verdict = await checkGuard(BASELINE, measure, strict, (line) => lines.push(line))
  return { ...verdict, labels, lines }
}

describe('pnpm bench:check', () => {
  it('runs streaming-150k-watermark-lag with Tidemark and the floor only, 12 rounds, no memory runs', () => {
    expect(GUARD_PROFILE).toBe('streaming-150k-watermark-lag')
    expect(parseProfileArgs(GUARD_ARGS)).toMatchObject({ only: ['tidemark', 'plain-loop'], rounds: 12, memory: false })
  })

  it("reads Tidemark's share of the floor and its wall over CPU time from the profile's figures", () => {
    const figures = {
      ratios: [{ name: 'engine/floor', median: 0.39, relSpread: 0.02, perRound: Array(12).fill(0.39) }],
      contenders: [{ name: 'tidemark', timeMs: { median: 40 }, wallMs: { median: 60 } }],
    } as unknown as ProfileFigures
    expect(guardSample({ figures, code: 0, tail: '', ms: 1 } as ChildRun)).toEqual({ ratio: 0.39, relSpread: 0.02, rounds: 12, contention: 1.5 })
    expect(() => guardSample({ figures: null, code: 1, tail: 'boom', ms: 1 })).toThrow(/streaming-150k-watermark-lag failed \(exit 1\):\nboom/)
  })

  it('keeps the tolerance within 5–35%, 3 × the combined standard error and between-process spread', () => {
    expect(guardTolerance({ ...BASELINE, relSpread: 0, betweenProcesses: 0 }, { ...sample(0.4), relSpread: 0 })).toBe(0.05)
    expect(guardTolerance({ ...BASELINE, betweenProcesses: 0.5 }, sample(0.4))).toBe(0.35)
    const se = (1.2533 * 0.03) / Math.sqrt(12)
    expect(guardTolerance({ ...BASELINE, betweenProcesses: 0.04 }, sample(0.4))).toBeCloseTo(3 * Math.sqrt(2 * se ** 2 + 0.04 ** 2), 12)
  })

  it('passes a ratio within tolerance (exit 0), in one process, the ratio on its last line', async () => {
    const result = await check(false, sample(0.39))
    expect(result).toMatchObject({ verdict: 'OK', exitCode: 0, labels: ['check'] })
    expect(result.lines.at(-1)).toMatch(/^bench:check OK: streaming-150k-watermark-lag engine\/floor ratio 0\.3900 \(39\.0% of the plain-loop floor.*vs baseline 0\.4000: -2\.5%, tolerance −/)
  })

  it('re-measures a low result once in a fresh process, and passes when that one is within tolerance', async () => {
    const result = await check(false, sample(0.3), sample(0.395))
    expect(result).toMatchObject({ verdict: 'OK', exitCode: 0, labels: ['check', 'confirm'] })
  })

  it('fails with exit 1 when the second measurement is low too', async () => {
    const result = await check(false, sample(0.3), sample(0.31))
    expect(result).toMatchObject({ verdict: 'REGRESSION', exitCode: 1, labels: ['check', 'confirm'] })
    expect(result.lines.at(-1)).toMatch(/^bench:check REGRESSION: .* ratio 0\.3100 /)
    // The better of the two counts.
    expect((await check(false, sample(0.36), sample(0.3))).lines.at(-1)).toMatch(/ ratio 0\.3600 /)
  })

  it('calls a low result INCONCLUSIVE (exit 0) when Tidemark sat descheduled (wall above 1.25× CPU), without a second run', async () => {
    const result = await check(false, sample(0.3, 1.3))
    expect(result).toMatchObject({ verdict: 'INCONCLUSIVE', exitCode: 0, labels: ['check'] })
    expect(result.lines.at(-1)).toMatch(/^bench:check INCONCLUSIVE: /)
    expect((await check(false, sample(0.3, 1.25), sample(0.3, 1.25))).verdict).toBe('REGRESSION')
  })

  it('fails a contended low result with --strict', async () => {
    expect(await check(true, sample(0.3, 1.3))).toMatchObject({ verdict: 'REGRESSION', exitCode: 1 })
  })

  it('measures a new baseline (--update) in 3 processes: the median ratio and the spread between them', async () => {
    const { labels, measure } = measurements(sample(0.38), sample(0.4), { ...sample(0.42), contention: 1.1 })
    const baseline = await measureBaseline(measure)
    expect(labels).toEqual(['baseline 1/3', 'baseline 2/3', 'baseline 3/3'])
    expect(baseline).toMatchObject({ profile: GUARD_PROFILE, ratio: 0.4, processes: 3, rounds: 12, betweenProcesses: 0.05, contention: 1.1 })
  })
})
