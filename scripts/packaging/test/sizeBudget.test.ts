import { describe, expect, it } from 'vitest'
import { type PackageSize, sizeTable, withinBudget } from '../sizeBudget.ts'

const size = (name: string, adds: number, budget: number | undefined): PackageSize => ({
  name,
  adds,
  addsMinified: adds * 3,
  withSiblings: adds * 2,
  budget,
  peers: [],
})

describe('size budget verdicts', () => {
  it('passes at the budget, fails one byte over it and without a budget', () => {
    expect(withinBudget(size('a', 3000, 3000))).toBe(true)
    expect(withinBudget(size('a', 3001, 3000))).toBe(false)
    expect(withinBudget(size('a', 1, undefined))).toBe(false)
  })

  it('prints the figure and by how much a budget is missed', () => {
    const table = sizeTable([size('@tidemark/ok', 2500, 3000), size('@tidemark/big', 16_410, 12_000), size('@tidemark/new', 100, undefined)])
    expect(table[0]).toMatch(/^package\s+adds \(gzip\)\s+budget\s+verdict/)
    expect(table[1]).toMatch(/^@tidemark\/ok\s+2\.50 kB\s+3\.00 kB\s+ok\s+5\.00 kB/)
    expect(table[2]).toMatch(/^@tidemark\/big\s+16\.41 kB\s+12\.00 kB\s+OVER by 4\.41 kB/)
    expect(table[3]).toContain('NO BUDGET (add to scripts/packaging/size-budget.json)')
  })
})
