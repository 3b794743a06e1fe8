/**
 * bench/README.md: the report (`results/latest.md`, `latest.svg`) is rendered from `latest.json`
 * (`pnpm bench -- --report-only`); it states the load average and the processes pooled, marks
 * each target ✓/✗, judges an absolute time target on elapsed time with the CPU time beside it,
 * and lists the profiles run elsewhere and the ones that failed.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ratioChart } from '../harness/chart.ts'
import { RESULTS_DIR } from '../harness/child.ts'
import type { ContenderFigures, ProfileFigures, RatioFigures } from '../harness/profile.ts'
import { type BenchRun, reportMarkdown } from '../harness/report.ts'

function ratio(name: string, format: 'percent' | 'times', median: number, target?: number): RatioFigures {
  return {
    name,
    label: name,
    subject: 'tidemark',
    reference: name === 'engine/floor' ? 'plain-loop' : 'rxjs',
    format,
    median,
    min: median * 0.9,
    max: median * 1.1,
    relSpread: 0.02,
    perRound: [median],
    meetsTarget: target === undefined ? null : median >= target,
    ...(target === undefined ? {} : { target }),
  }
}

function contender(name: string, cpuMs: number, wallMs = cpuMs): ContenderFigures {
  const spread = (median: number) => ({ median, min: median, max: median, relSpread: 0, runs: [median] })
  return { name, label: `${name} label`, timeMs: spread(cpuMs), wallMs: spread(wallMs), eventsPerSec: Math.round(100_000 / (cpuMs / 1000)), memory: null, end: {}, counts: {} }
}

function profile(name: string, ratios: RatioFigures[], extra: Partial<ProfileFigures> = {}): ProfileFigures {
  return {
    profile: name,
    description: name,
    events: 100_000,
    batches: 200,
    date: '2026-12-01T00:00:00.000Z',
    node: 'v20.20.2',
    rounds: 5,
    warmup: 2,
    contenders: [contender('tidemark', 50), contender('plain-loop', 20), contender('rxjs', 2_000)],
    ratios,
    agreement: [],
    process: { maxRssMB: 300, wallMs: 10_000, prepareMs: 100 },
    ...extra,
  }
}

function run(results: ProfileFigures[], extra: Partial<BenchRun> = {}): BenchRun {
  return {
    date: '2026-12-01T09:30:00.000Z',
    node: 'v20.20.2',
    cpu: 'Test CPU',
    cores: 2,
    engine: 'abc1234',
    load: { start: 0.42, end: 1.87 },
    wallMs: 150_000,
    results,
    failures: [],
    missing: [],
    ...extra,
  }
}

const row = (markdown: string, profile: string) => markdown.split('\n').find((line) => line.startsWith(`| ${profile} `)) ?? ''

describe('the report', () => {
  it('states the date, engine, Node, machine and load average of the run', () => {
    expect(reportMarkdown(run([]))).toContain('2026-12-01 09:30 UTC · engine abc1234 · Node v20.20.2 · Test CPU × 2 · load average 0.4 → 1.9 · 150 s')
  })

  it('marks a met target ✓ and a missed one ✗, and a ratio without a target with neither', () => {
    const md = reportMarkdown(
      run([
        profile('streaming-100k', [ratio('engine/floor', 'percent', 0.42, 0.4), ratio('engine-vs-rxjs', 'times', 19.5, 20), ratio('engine/rules', 'percent', 0.6)]),
      ]),
    )
    const line = row(md, 'streaming-100k')
    expect(line).toContain('| 42.0% [37.8–46.2] ✓ |')
    expect(line).toContain('| 19.5× [17.6–21.5] ✗ |')
    expect(line).toContain('engine/rules: 60.0% [54.0–66.0] |')
  })

  it('tags the guard profile', () => {
    expect(row(reportMarkdown(run([profile('streaming-150k-watermark-lag', [])])), 'streaming-150k-watermark-lag (guard)')).not.toBe('')
  })

  it('judges an absolute time target on elapsed time, with the process CPU time beside it', () => {
    const target = { contender: 'through-yjs-one-update', maxMs: 50 }
    const met = profile('merge-8-replicas', [], { timeTarget: target, contenders: [contender('through-yjs-one-update', 58, 45)] })
    const missed = profile('merge-8-replicas', [], { timeTarget: target, contenders: [contender('through-yjs-one-update', 40, 55)] })
    expect(row(reportMarkdown(run([met])), 'merge-8-replicas')).toContain('target: through-yjs-one-update < 50 ms elapsed: 45.0 ms ✓ (process CPU 58.0 ms)')
    expect(row(reportMarkdown(run([missed])), 'merge-8-replicas')).toContain('target: through-yjs-one-update < 50 ms elapsed: 55.0 ms ✗ (process CPU 40.0 ms)')
  })

  it('says how many processes each profile pooled, and nothing when each ran in one', () => {
    expect(reportMarkdown(run([profile('a', [], { processes: 3 }), profile('b', [], { processes: 3 })]))).toContain(
      'each profile ran in 3 processes, one after another, and its figures pool their rounds',
    )
    expect(reportMarkdown(run([profile('a', [])]))).not.toContain('processes, one after another')
  })

  it('lists the profiles run elsewhere without figures, and the failed ones with their error', () => {
    const md = reportMarkdown(
      run([], {
        missing: [{ name: 'wal-append', where: 'browser', status: 'separate: `pnpm bench:browser:wal`' }],
        failures: [{ profile: 'correction-churn', error: 'correction-churn: tidemark and rxjs disagree on 1 of 9: a|b' }],
      }),
    )
    expect(md).toContain('| wal-append (browser) | – | – | – | – | – | – | separate: `pnpm bench:browser:wal` |')
    expect(md).toContain('| correction-churn | failed | – | – | – | – | – | correction-churn: tidemark and rxjs disagree on 1 of 9: a/b |')
  })

  it('is the committed results/latest.md and latest.svg, rendered from results/latest.json', () => {
    const latest = JSON.parse(readFileSync(join(RESULTS_DIR, 'latest.json'), 'utf8')) as BenchRun
    expect(reportMarkdown(latest)).toBe(readFileSync(join(RESULTS_DIR, 'latest.md'), 'utf8'))
    expect(ratioChart(latest.results.filter((f) => f.ratios.length > 0))).toBe(readFileSync(join(RESULTS_DIR, 'latest.svg'), 'utf8'))
  })
})
