/**
 * aggregates-accuracy: not a speed ratio but the accuracy and size of the aggregates' sketches.
 *
 * - quantiles (relativeAccuracy 0.01, maxBuckets 2048): 1M values from each of five
 *   distributions; the relative error of p50, p95, p99 and p99.9 against the exact sorted values
 *   (rank ⌊q·(n − 1)⌋), and the worst over the 999 quantiles 0.001 … 0.999. Target: ≤ 1%.
 *   The same values split into 8 shards, each sketched, then merged in a shuffled order, must
 *   encode to the same bytes as the one-pass sketch.
 * - distinct (precision 14): 10^3 … 10^7 distinct identities, streamed (never held in an array),
 *   as strings (`s<row>-<i>`) and as integers. Target: error ≤ 2%.
 * - bytes of the encoded states, per distribution and cardinality, and for cell-sized states.
 *
 *   node --import tsx --conditions=@tidemark/source bench/aggregates-accuracy.ts [--json]
 */
import { seededRandom } from '@tidemark/seeded-random'
import { type Aggregate, distinct, histogram, latest, quantiles } from '@tidemark/engine'
import type { ProfileFigures } from './harness/profile.ts'
import { isMain } from './measure.ts'

/** Values per distribution, and the distinct counts streamed: what `pnpm bench` measures. */
export const ACCURACY_SIZES: AccuracySizes = { values: 1_000_000, distinct: [1e3, 1e4, 1e5, 1e6, 1e7] }

export interface AccuracySizes {
  readonly values: number
  readonly distinct: readonly number[]
}
const ALPHA = 0.01
const DISTINCT_TARGET = 0.02
const SHOWN = [0.5, 0.95, 0.99, 0.999]

interface Distribution {
  readonly name: string
  readonly draw: (random: () => number) => number
}

/** A standard normal deviate (Box–Muller), from two uniform draws. */
function normal(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random())
}

const DISTRIBUTIONS: readonly Distribution[] = [
  { name: 'uniform [0, 1000)', draw: (random) => random() * 1000 },
  { name: 'lognormal (μ 3, σ 1.5)', draw: (random) => Math.exp(3 + 1.5 * normal(random)) },
  { name: 'bimodal (modes 20 and 300)', draw: (random) => (random() < 0.7 ? Math.exp(Math.log(20) + 0.3 * normal(random)) : Math.exp(Math.log(300) + 0.2 * normal(random))) },
  { name: 'Pareto (shape 1.1, heavy tail)', draw: (random) => (1 - random()) ** (-1 / 1.1) },
  { name: 'constant 42', draw: () => 42 },
]

interface QuantileRow {
  readonly name: string
  readonly errors: readonly number[]
  readonly worst: number
  readonly bytes: number
  readonly buckets: number
  readonly mergedSame: boolean
}

interface DistinctRow {
  readonly n: number
  readonly estimate: number
  readonly error: number
  readonly integerError: number
  readonly bytes: number
}

function event(value: number, i: number) {
  return { id: `e${i}`, source: 'bench', seq: i + 1, ts: i, value }
}

function quantileRow(distribution: Distribution, index: number, N: number): QuantileRow {
  const random = seededRandom(1_000 + index)
  const values = new Float64Array(N)
  for (let i = 0; i < N; i++) values[i] = distribution.draw(random)
  const fine = Array.from({ length: 999 }, (_, i) => (i + 1) / 1000)
  const sketch = quantiles({ at: SHOWN, relativeAccuracy: ALPHA })
  // Readers of the same state for the fine grid (at most 100 quantiles per aggregate; `at` does not shape the state).
  const readers = Array.from({ length: 10 }, (_, k) => quantiles({ at: fine.slice(k * 100, k * 100 + 100), relativeAccuracy: ALPHA }))
  let state = sketch.init()
  for (let i = 0; i < N; i++) state = sketch.add(state, values[i] as number, event(values[i] as number, i))
  // 8 shards of interleaved values, merged in a shuffled order: the bytes must not change.
  const shards = Array.from({ length: 8 }, () => sketch.init())
  for (let i = 0; i < N; i++) sketch.add(shards[i % 8] as ReturnType<typeof sketch.init>, values[i] as number, event(values[i] as number, i))
  const order = shards.map((s, i) => ({ s, key: seededRandom(i + 77)() })).sort((a, b) => a.key - b.key)
  const merged = order.reduce((acc, { s }) => sketch.merge(acc, s), sketch.init())
  const bytes = sketch.encode(state)
  const mergedSame = Buffer.from(sketch.encode(merged)).equals(Buffer.from(bytes))
  const estimates = sketch.result(state)
  const sorted = values.slice().sort()
  const relative = (q: number, estimate: number) => {
    const exact = sorted[Math.floor(q * (N - 1))] as number
    return exact === 0 ? Math.abs(estimate) : Math.abs(estimate - exact) / Math.abs(exact)
  }
  const errors = SHOWN.map((q, i) => relative(q, estimates[i] as number))
  const fineEstimates = readers.flatMap((reader) => reader.result(state))
  const worst = Math.max(...fine.map((q, i) => relative(q, fineEstimates[i] as number)))
  return { name: distribution.name, errors, worst, bytes: bytes.length, buckets: state.positive.counts.filter((c) => c > 0).length + state.negative.counts.filter((c) => c > 0).length, mergedSame }
}

function distinctRow(n: number, row: number): DistinctRow {
  const devices = distinct()
  let state = devices.init()
  const prefix = `s${row}-`
  for (let i = 0; i < n; i++) state = devices.add(state, prefix + i, event(0, i))
  let integers = devices.init()
  const base = row * 1e8
  for (let i = 0; i < n; i++) integers = devices.add(integers, base + i, event(0, i))
  const estimate = devices.result(state)
  return {
    n,
    estimate,
    error: Math.abs(estimate - n) / n,
    integerError: Math.abs(devices.result(integers) - n) / n,
    bytes: devices.encode(state).length,
  }
}

/** Bytes of cell-sized states: one source's readings in one window. */
function cellBytes(): string[] {
  const sizes = [1, 60, 1000]
  const random = seededRandom(5)
  const values = Array.from({ length: 1000 }, () => Math.exp(3 + normal(random)))
  const rows: [string, Aggregate<unknown, unknown, number> | Aggregate<unknown, unknown, string | number>, (i: number) => number | string][] = [
    ['quantiles (α 0.01), lognormal values', quantiles({ at: [0.5] }) as Aggregate<unknown, unknown, number>, (i) => values[i] as number],
    ['distinct, one identity (its own source)', distinct() as Aggregate<unknown, unknown, string | number>, () => 'device-17'],
    ['distinct, a new identity per reading', distinct() as Aggregate<unknown, unknown, string | number>, (i) => `device-${i}`],
    ['latest', latest() as Aggregate<unknown, unknown, number>, (i) => values[i] as number],
    ['histogram (3 bounds)', histogram({ bounds: [10, 50, 100] }) as Aggregate<unknown, unknown, number>, (i) => values[i] as number],
  ]
  const lines = ['| state | 1 reading | 60 readings | 1,000 readings |', '| --- | ---: | ---: | ---: |']
  for (const [label, aggregate, input] of rows) {
    const cells = sizes.map((size) => {
      let state = aggregate.init()
      for (let i = 0; i < size; i++) state = (aggregate as Aggregate<unknown, unknown, unknown>).add(state, input(i), { ...event(values[i] as number, i), source: 'device-17' })
      return `${aggregate.encode(state).length} B`
    })
    lines.push(`| ${label} | ${cells.join(' | ')} |`)
  }
  return lines
}

/** `10^7` for 10,000,000; other numbers written out. */
const powerOfTen = (n: number): string => (Number.isInteger(Math.log10(n)) ? `10^${Math.log10(n)}` : n.toLocaleString('en'))

const percent = (x: number) => `${(x * 100).toFixed(3)}%`

export function run(progress: (line: string) => void, sizes: AccuracySizes = ACCURACY_SIZES): { tables: string[]; headline: string; met: boolean } {
  const started = performance.now()
  const quantileRows = DISTRIBUTIONS.map((d, i) => {
    const row = quantileRow(d, i, sizes.values)
    progress(`quantiles ${d.name}: worst ${percent(row.worst)}, ${row.bytes} B`)
    return row
  })
  const distinctRows = sizes.distinct.map((n, i) => {
    const row = distinctRow(n, i)
    progress(`distinct ${n.toLocaleString('en')}: error ${percent(row.error)} (integers ${percent(row.integerError)}), ${row.bytes} B`)
    return row
  })
  const worstQuantile = Math.max(...quantileRows.flatMap((r) => [...r.errors, r.worst]))
  const worstDistinct = Math.max(...distinctRows.flatMap((r) => [r.error, r.integerError]))
  const converged = quantileRows.every((r) => r.mergedSame)
  const met = worstQuantile <= ALPHA && worstDistinct <= DISTINCT_TARGET && converged
  const mark = (ok: boolean) => (ok ? '✓' : '✗')
  const tables = [
    `**quantiles**: ${sizes.values.toLocaleString('en')} values per distribution, relativeAccuracy ${ALPHA}, maxBuckets 2048; relative error against the exact value of rank ⌊q·(n − 1)⌋; target ≤ ${ALPHA * 100}%. "8 shards merged" = the same values sketched in 8 shards, merged in a shuffled order, encode to the same bytes.`,
    '',
    '| distribution | p50 | p95 | p99 | p99.9 | worst of 0.001…0.999 | ≤ 1% | 8 shards merged | buckets | encoded |',
    '| --- | ---: | ---: | ---: | ---: | ---: | :-: | :-: | ---: | ---: |',
    ...quantileRows.map(
      (r) =>
        `| ${r.name} | ${r.errors.map(percent).join(' | ')} | ${percent(r.worst)} | ${mark(Math.max(r.worst, ...r.errors) <= ALPHA)} | ${r.mergedSame ? 'same bytes' : 'DIFFERENT'} | ${r.buckets} | ${r.bytes.toLocaleString('en')} B |`,
    ),
    '',
    `**distinct**: precision 14 (16,384 registers; standard error 0.81%), identities streamed; target ≤ ${DISTINCT_TARGET * 100}%.`,
    '',
    '| distinct values | estimate (strings) | error (strings) | error (integers) | ≤ 2% | encoded |',
    '| ---: | ---: | ---: | ---: | :-: | ---: |',
    ...distinctRows.map(
      (r) =>
        `| ${r.n.toLocaleString('en')} | ${r.estimate.toLocaleString('en')} | ${percent(r.error)} | ${percent(r.integerError)} | ${mark(Math.max(r.error, r.integerError) <= DISTINCT_TARGET)} | ${r.bytes.toLocaleString('en')} B |`,
    ),
    '',
    '**bytes per cell state** (one source, one window):',
    '',
    ...cellBytes(),
  ]
  const headline = `quantiles worst ${percent(worstQuantile)} ${mark(worstQuantile <= ALPHA)} (≤ 1%), merged shards ${converged ? 'bit-identical ✓' : 'DIFFER ✗'}; distinct worst ${percent(worstDistinct)} ${mark(worstDistinct <= DISTINCT_TARGET)} (≤ 2%, up to ${powerOfTen(Math.max(...sizes.distinct))}); ${((performance.now() - started) / 1000).toFixed(1)} s`
  return { tables, headline, met }
}

if (isMain(import.meta.url)) {
  const json = process.argv.includes('--json')
  const started = performance.now()
  const { tables, headline } = run((line) => process.stderr.write(`  ${line}\n`))
  if (json) {
    const figures: ProfileFigures = {
      profile: 'aggregates-accuracy',
      description: 'accuracy and encoded size of the quantiles and distinct sketches',
      events: DISTRIBUTIONS.length * ACCURACY_SIZES.values + 2 * ACCURACY_SIZES.distinct.reduce((n, d) => n + d, 0),
      batches: 0,
      date: new Date().toISOString(),
      node: process.version,
      rounds: 1,
      warmup: 0,
      contenders: [],
      ratios: [],
      agreement: [],
      headline,
      tables,
      process: { maxRssMB: Number((process.resourceUsage().maxRSS / 1024).toFixed(1)), wallMs: Math.round(performance.now() - started), prepareMs: 0 },
    }
    process.stdout.write(`${JSON.stringify(figures)}\n`)
  } else {
    process.stdout.write(`${tables.join('\n')}\n\n${headline}\n`)
  }
}
