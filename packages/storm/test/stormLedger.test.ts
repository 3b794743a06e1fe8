import { assertSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { StormBatchReport } from '../src/contract/stormPageApi.ts'
import { StormLedger } from '../src/driver/stormLedger.ts'

const FILE = 'packages/storm/test/stormLedger.test.ts'

function batch(source: string, from: number, to: number): StormBatchReport {
  return { source, from, to, accepted: to - from + 1, beyondLateness: 0, duplicates: 0, rejected: 0 }
}

/** Seqs 1..n cut into consecutive batches at `cuts`. */
function batches(source: string, n: number, cuts: readonly number[]): StormBatchReport[] {
  const ends = [...new Set(cuts.filter((c) => c >= 1 && c < n)), n].sort((a, b) => a - b)
  let from = 1
  return ends.map((to) => {
    const b = batch(source, from, to)
    from = to + 1
    return b
  })
}

const coverage = fc
  .tuple(fc.integer({ min: 1, max: 500 }), fc.array(fc.integer({ min: 1, max: 499 }), { maxLength: 30 }), fc.integer({ min: 0, max: 2 ** 31 }))
  .map(([n, cuts, order]) => ({ n, list: batches('d', n, cuts), order }))

/** The reports in an order drawn from `order`: the ledger must not depend on arrival order. */
function shuffled<T>(list: readonly T[], order: number): T[] {
  return [...list].map((item, k) => ({ item, key: Math.imul(k + 1, order | 1) >>> 0 })).sort((a, b) => a.key - b.key).map((x) => x.item)
}

describe('StormLedger', () => {
  it('totals reports that cover 1..n exactly once, in any arrival order, with no gap', () => {
    const name = 'totals reports that cover 1..n exactly once, in any arrival order, with no gap'
    assertSeeded(
      fc.property(coverage, ({ n, list, order }) => {
        const ledger = new StormLedger()
        for (const report of shuffled(list, order)) ledger.record([report])
        expect(ledger.durable('d')).toBe(n)
        expect(ledger.totals(new Map([['d', n]]))).toEqual({ produced: n, accepted: n, beyondLateness: 0, duplicates: 0, rejected: 0, gaps: [] })
      }),
      FILE,
      name,
      300,
    )
  }, PROPERTY_TIMEOUT)

  it('names the seqs of a batch never reported, and of a batch reported twice', () => {
    const name = 'names the seqs of a batch never reported, and of a batch reported twice'
    assertSeeded(
      fc.property(coverage, fc.nat(), ({ n, list }, pick) => {
        const k = pick % list.length
        const missing = list[k] as StormBatchReport
        const lost = new StormLedger()
        lost.record(list.filter((_, i) => i !== k))
        const gaps = lost.totals(new Map([['d', n]])).gaps
        expect(gaps).toContain(k === list.length - 1 ? `d: produced up to ${n}, durable reports end at ${missing.from - 1}` : `d: seqs ${missing.from}..${missing.to} never reported durable`)

        const twice = new StormLedger()
        twice.record([...list, missing])
        expect(twice.totals(new Map([['d', n]])).gaps).toEqual([`d: seqs ${missing.from}..${missing.to} reported durable twice`])
      }),
      FILE,
      name,
      300,
    )
  }, PROPERTY_TIMEOUT)

  it('checks a later life of a device from its first seq on, and sums the receipts', () => {
    const ledger = new StormLedger()
    ledger.record([batch('d', 1, 10), { ...batch('d', 11, 20), accepted: 8, beyondLateness: 2 }, batch('e', 1, 5)])
    expect(ledger.totals(new Map([['d', 20]]), new Map([['d', 11]]))).toEqual({ produced: 10, accepted: 8, beyondLateness: 2, duplicates: 0, rejected: 0, gaps: [] })
    expect(ledger.totals(new Map([['e', 7]])).gaps).toEqual(['e: produced up to 7, durable reports end at 5'])
    expect(ledger.durable('nobody')).toBe(0)
  })
})
