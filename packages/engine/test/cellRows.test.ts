import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type Cell, emptyCell } from '../src/lattice/cell.ts'
import { packCellGroup } from '../src/lattice/cellGroup.ts'
import { type Aggregate, CellSet } from '../src/lattice/cellSet.ts'
import { assertSeeded } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/cellRows.test.ts'
const T0 = 1_700_000_040_000

function peerCell(n: number): Cell {
  return { count: n, sum: n * 1.5, min: 1, max: n * 2, maxTs: T0 + n, version: n }
}

describe('CellSet: peers’ cells kept as rows', () => {
  it('keeps every source’s cell in source order whatever the arrival order, room reserved or not, with objects mixed in', () => {
    const name = 'keeps every source’s cell in source order whatever the arrival order, room reserved or not, with objects mixed in'
    assertSeeded(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 0, max: 12 }),
        fc.integer({ min: -1, max: 30 }),
        (sources, reserve, ownAt) => {
          const w = new CellSet()
          w.reserveRows(reserve)
          const expected = new Map<string, Cell>()
          sources.forEach((s, i) => {
            const name = `d${String(s).padStart(2, '0')}`
            const cell = peerCell(s + 1)
            if (i === ownAt) {
              // A source this replica writes: an object cell among the rows.
              const own = emptyCell()
              Object.assign(own, cell)
              w.addCell(name, own)
            } else {
              expect(w.mergePeerCell(name, packCellGroup('tumbling:60000', T0, name, ['k'], [cell]), 0)).toBe(true)
            }
            expected.set(name, cell)
          })
          const names = [...expected.keys()].sort()
          expect(w.sources()).toEqual(names)
          for (const [i, name] of names.entries()) expect(w.cellAt(i)).toEqual(expected.get(name))
          const all = [...expected.values()]
          const result: Aggregate = { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY }
          w.fold(result, null)
          expect(result.count).toBe(all.reduce((n, c) => n + c.count, 0))
          expect(result.max).toBe(Math.max(...all.map((c) => c.max)))
          expect(w.count()).toBe(result.count)
          // a stale copy changes nothing; a newer one replaces the row in place
          const first = names[0] as string
          const older = { ...(expected.get(first) as Cell), version: 0 }
          expect(w.mergePeerCell(first, packCellGroup('tumbling:60000', T0, first, ['k'], [older]), 0)).toBe(false)
          // the row becomes an object when a placement asks for it, with the same content
          expect(w.cell(first)).toEqual(expected.get(first))
        },
      ),
      FILE,
      name,
      300,
    )
  })
})
