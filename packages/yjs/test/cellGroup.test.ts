import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type Cell, type CellEntry, type CellGroup, groupCell, groupCellEntries, packCellGroup } from '@tidemark/engine'
import { cellEntriesOf, cellValuesProblem, groupCellProblem, validCellGroups } from '@tidemark/engine/adapter'
import { KeyLists, readGroupEntry, writeGroupEntry } from '../src/schema/docEntry.ts'
import { assertSeeded } from '@tidemark/seeded-random/property'

const FILE = 'packages/yjs/test/cellGroup.test.ts'
const T0 = 1_700_000_040_000

/** Numbers a hostile or buggy peer could put in a column, and ordinary ones. */
const columnValue = fc.oneof(
  fc.constantFrom(0, -0, 1, 2, 1.5, -3, 2 ** 40, 2 ** 41, 2 ** 53, -(2 ** 53), 1e300, -1e300, 1e308, Number.MAX_VALUE),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, T0, 2 ** 53 / 1000, 2 ** 53 / 1000 + 1),
  fc.integer({ min: -1_000, max: 1_000 }),
  fc.double({ noNaN: false }),
)

function oneCell(values: readonly number[]): CellGroup {
  const [count, sum, min, max, maxTs, version] = values as [number, number, number, number, number, number]
  return packCellGroup('tumbling:60000', T0, 'd1', ['k'], [{ count, sum, min, max, maxTs, version }])
}

describe('cell groups', () => {
  it('accepts exactly the cells the full value check accepts (the fast path never lets a bad cell through)', () => {
    const name = 'accepts exactly the cells the full value check accepts (the fast path never lets a bad cell through)'
    assertSeeded(
      fc.property(fc.array(columnValue, { minLength: 6, maxLength: 6 }), (values) => {
        const [count, sum, min, max, maxTs, version] = values
        const full = cellValuesProblem(count, sum, min, max, maxTs, version)
        const group = groupCellProblem(oneCell(values), 0)
        expect(group === null).toBe(full === null)
        if (full !== null) expect(group).toBe(full)
      }),
      FILE,
      name,
      2_000,
    )
  })

  it('groups loose entries by window, start and source, and gives every cell back', () => {
    const cell = (count: number, version: number): Cell => ({ count, sum: count * 2, min: 1, max: 3, maxTs: T0 + count, version })
    const entries: CellEntry[] = [
      { address: { window: 'w', key: 'a', start: T0, source: 's1' }, cell: cell(1, 1) },
      { address: { window: 'w', key: 'b', start: T0, source: 's1' }, cell: cell(2, 2) },
      { address: { window: 'w', key: 'a', start: T0, source: 's2' }, cell: cell(3, 1) },
      { address: { window: 'w', key: '__proto__', start: T0 + 60_000, source: 's1' }, cell: cell(4, 3) },
    ]
    const groups = groupCellEntries(entries)
    expect(groups.map((g) => [g.start, g.source, g.keys])).toEqual([
      [T0, 's1', ['a', 'b']],
      [T0, 's2', ['a']],
      [T0 + 60_000, 's1', ['__proto__']],
    ])
    expect(groupCell(groups[0] as CellGroup, 1)).toEqual(cell(2, 2))
    expect(cellEntriesOf(groups)).toEqual(entries.slice().sort((x, y) => x.address.start - y.address.start || (x.address.source < y.address.source ? -1 : 1)))
  })

  it('leaves out only the invalid cells of a group and reports each', () => {
    const good = { count: 2, sum: 4, min: 1, max: 3, maxTs: T0, version: 1 }
    const group = packCellGroup('w', T0, 's', ['a', 'b', 'c'], [good, { ...good, count: Number.NaN }, { ...good, min: 5 }])
    const reported: string[] = []
    const valid = validCellGroups([group], (what, why) => reported.push(`${what}: ${why}`))
    expect(valid.map((g) => g.keys)).toEqual([['a']])
    expect(reported).toHaveLength(2)
    expect(reported[0]).toContain('"b"')
    // an all-valid list comes back as it is
    const clean = [group].map((g) => packCellGroup(g.window, g.start, g.source, ['a'], [good]))
    expect(validCellGroups(clean, () => {})).toBe(clean)
  })

  it('survives the doc entry round trip, sharing one parsed key list between groups', () => {
    const keyLists = new KeyLists()
    const cells = [
      { count: 1, sum: 0.1, min: 0.1, max: 0.1, maxTs: T0, version: 1 },
      { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, maxTs: T0, version: 9 },
    ]
    const first = readGroupEntry(writeGroupEntry(packCellGroup('w', T0, 's1', ['x', 'y'], cells)), keyLists)
    const second = readGroupEntry(writeGroupEntry(packCellGroup('w', T0, 's2', ['x', 'y'], cells)), keyLists)
    if (typeof first === 'string' || typeof second === 'string') throw new Error(`${first} ${second}`)
    expect([groupCell(first, 0), groupCell(first, 1)]).toEqual(cells)
    expect(second.keys).toBe(first.keys)
    // a known key list is still checked against the entry that carries it
    const three = [...writeGroupEntry(packCellGroup('w', T0, 's3', ['x', 'y', 'z'], [...cells, cells[0] as Cell]))]
    three[4] = JSON.stringify(['x', 'y'])
    expect(readGroupEntry(three, keyLists)).toMatch(/keys must be a JSON array of 3 strings/)
    const unframed = [...writeGroupEntry(packCellGroup('w', T0, 's4', ['x', 'y'], cells))]
    unframed[6] = 'states'
    expect(readGroupEntry(unframed, keyLists)).toMatch(/aggregates must be bytes/)
    expect((readGroupEntry(writeGroupEntry(packCellGroup('w', T0, 's5', ['x', 'y'], cells)), keyLists) as CellGroup).keys).toBe(first.keys)
    // unaligned bytes (a view into a larger update) read the same
    const raw = [...writeGroupEntry(packCellGroup('w', T0, 's1', ['x', 'y'], cells))]
    const bytes = raw[5] as Uint8Array
    const shifted = new Uint8Array(bytes.byteLength + 3)
    shifted.set(bytes, 3)
    raw[5] = shifted.subarray(3)
    const unaligned = readGroupEntry(raw)
    if (typeof unaligned === 'string') throw new Error(unaligned)
    expect(groupCell(unaligned, 0)).toEqual(cells[0])
  })

  it('carries each cell’s aggregate states through the doc entry, byte for byte, and refuses a column with bad framing', () => {
    const name = 'carries each cell’s aggregate states through the doc entry, byte for byte, and refuses a column with bad framing'
    const state = fc.uint8Array({ maxLength: 300 })
    assertSeeded(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 6 }), fc.array(state, { minLength: 30, maxLength: 30 }), fc.nat(), (keys, per, pool, cut) => {
        const names = Array.from({ length: keys }, (_, i) => `k${i}`)
        const cell: Cell = { count: 1, sum: 1, min: 1, max: 1, maxTs: T0, version: 1 }
        const aggregates = names.map((_, i) => Array.from({ length: per }, (_, a) => pool[(i * per + a) % pool.length] as Uint8Array))
        const entry = writeGroupEntry(packCellGroup('tumbling:60000', T0, 'd1', names, names.map(() => cell), aggregates))
        const read = readGroupEntry(entry)
        if (typeof read === 'string') throw new Error(read)
        expect(read.aggregates?.map((c) => c.map((bytes) => [...bytes]))).toEqual(aggregates.map((c) => c.map((bytes) => [...bytes])))
        // Cut anywhere short of its end (an empty column is a group without aggregates), the framing fails: refused, never misread.
        const column = entry[6] as Uint8Array
        const short = [...entry.slice(0, 6), column.subarray(0, 1 + (cut % (column.length - 1)))]
        expect(typeof readGroupEntry(short)).toBe('string')
      }),
      FILE,
      name,
      300,
    )
    // Without aggregates the column is empty, and a group reads back without them.
    const plain = readGroupEntry(writeGroupEntry(packCellGroup('tumbling:60000', T0, 'd1', ['k'], [{ count: 1, sum: 1, min: 1, max: 1, maxTs: T0, version: 1 }])))
    expect(typeof plain !== 'string' && plain.aggregates === undefined).toBe(true)
  })
})
