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

  it('writes this replica’s own cells in place through rows kept by the writer, whatever inserts come between, until one becomes an object', () => {
    const name = 'writes this replica’s own cells in place through rows kept by the writer, whatever inserts come between, until one becomes an object'
    // Each step: a source (0–11) and what happens to it: 0–5 a reading of `value` written as the
    // placement writes it (through the row it kept), 6 a peer’s cell, 7 the cell asked for as an object.
    const step = fc.record({ source: fc.integer({ min: 0, max: 11 }), op: fc.integer({ min: 0, max: 7 }), value: fc.integer({ min: -50, max: 50 }) })
    assertSeeded(
      fc.property(fc.array(step, { minLength: 1, maxLength: 80 }), (steps) => {
        const set = new CellSet()
        const model = new Map<string, Cell>()
        const held = new Map<string, number>()
        const objects = new Map<string, Cell>()
        let version = 0
        for (const { source, op, value } of steps) {
          const name = `d${String(source).padStart(2, '0')}`
          if (op <= 5) {
            version++
            // A kept row whose count is NaN no longer holds the cell: it became an object.
            const kept = held.get(name)
            let at = kept !== undefined && !Number.isNaN(set.rows[6 * kept]) ? kept : set.ownRow(name)
            if (at === -1) at = set.addRow(name, null)
            const v = set.rows
            const cell = model.get(name) ?? emptyCell()
            model.set(name, cell)
            cell.count++
            cell.sum += value
            cell.min = Math.min(cell.min, value)
            cell.max = Math.max(cell.max, value)
            cell.maxTs = Math.max(cell.maxTs, T0 + version)
            cell.version = version
            if (at === -2) {
              // An object now: written as one.
              Object.assign(objects.get(name) as Cell, cell)
              continue
            }
            held.set(name, at)
            const o = 6 * at
            v[o] = (v[o] as number) + 1
            v[o + 1] = (v[o + 1] as number) + value
            if (value < (v[o + 2] as number)) v[o + 2] = value
            if (value > (v[o + 3] as number)) v[o + 3] = value
            if (T0 + version > (v[o + 4] as number)) v[o + 4] = T0 + version
            v[o + 5] = version
          } else if (op === 6) {
            if (model.has(name)) continue
            const cell = peerCell(source + 1)
            expect(set.mergePeerCell(name, packCellGroup('tumbling:60000', T0, name, ['k'], [cell]), 0)).toBe(true)
            model.set(name, { ...cell })
          } else if (model.has(name) && !objects.has(name)) {
            const object = set.cell(name) as Cell
            expect(object).toEqual(model.get(name))
            objects.set(name, object)
            expect(set.ownRow(name)).toBe(-2)
            const kept = held.get(name)
            if (kept !== undefined) expect(set.rows[6 * kept]).toBeNaN()
          }
        }
        const names = [...model.keys()].sort()
        expect(set.sources()).toEqual(names)
        for (const [i, name] of names.entries()) expect({ ...set.cellAt(i) }).toEqual(model.get(name))
        const result: Aggregate = { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY }
        set.fold(result, null)
        expect(result.count).toBe([...model.values()].reduce((n, c) => n + c.count, 0))
        expect(set.count()).toBe(result.count)
      }),
      FILE,
      name,
      300,
    )
  })
})
