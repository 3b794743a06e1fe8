import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  type Cell,
  type CellMap,
  cellKey,
  compareCells,
  emptyCell,
  mergeCell,
  mergeCellMaps,
  parseCellKey,
} from '../src/index.ts'
import { copyCell } from '../src/lattice/cell.ts'
import { groupCell, packCellGroup } from '../src/lattice/cellGroup.ts'
import { CellSet } from '../src/lattice/cellSet.ts'
import { assertSeeded } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/lattice.test.ts'

function property<T>(name: string, arbitrary: fc.Arbitrary<T>, check: (value: T) => void, runs = 300): void {
  it(name, () => assertSeeded(fc.property(arbitrary, check), FILE, name, runs))
}

/**
 * Cells from small ranges, so that equal versions with different content (two
 * writers colliding) come up often and exercise the tie-break.
 */
const finite = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }))
const cell: fc.Arbitrary<Cell> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(null).map(() => emptyCell()) },
  {
    weight: 8,
    arbitrary: fc.record({
      count: fc.integer({ min: 1, max: 3 }),
      sum: finite,
      min: finite,
      max: finite,
      maxTs: fc.integer({ min: -2, max: 2 }),
      version: fc.integer({ min: 0, max: 3 }),
    }),
  },
)

/** Cell maps over a small key space, hostile names included, so maps overlap. */
const cellKeyArb = fc
  .tuple(
    fc.constantFrom('tumbling:10', 'session:5'),
    fc.constantFrom('', 'temp', '__proto__', 'constructor'),
    fc.integer({ min: 0, max: 2 }).map((n) => n * 10),
    fc.constantFrom('d1', '__proto__', 'hasOwnProperty'),
  )
  .map(([window, key, start, source]) => cellKey(window, key, start, source))
const cellMap: fc.Arbitrary<CellMap> = fc.array(fc.tuple(cellKeyArb, cell), { maxLength: 8 }).map((entries) => new Map(entries))

/** A map as plain, order-free data, so two maps compare by content. */
function plain(map: CellMap): [string, Cell][] {
  return [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

describe('cells are plain objects', () => {
  it('emptyCell, copyCell, a group’s and a row’s cells: Object.prototype, the fields of a literal in its order, each in its place', () => {
    const literal = { count: 2, sum: 43.5, min: 20, max: 23.5, maxTs: 1_000, version: 7 }
    const group = packCellGroup('tumbling:10', 0, 'd1', [''], [literal])
    const rows = new CellSet()
    rows.mergePeerCell('d1', group, 0)
    const cells: [string, Cell, Cell][] = [
      ['emptyCell', emptyCell(), { count: 0, sum: 0, min: Infinity, max: -Infinity, maxTs: -Infinity, version: 0 }],
      ['copyCell', copyCell(literal), literal],
      ['groupCell', groupCell(group, 0), literal],
      ['a row', rows.cellAt(0) as Cell, literal],
    ]
    for (const [made, cell, expected] of cells) {
      expect(Object.getPrototypeOf(cell), made).toBe(Object.prototype)
      expect(Object.keys(cell), made).toEqual(['count', 'sum', 'min', 'max', 'maxTs', 'version'])
      expect(cell, made).toStrictEqual(expected)
    }
  })
})

describe('mergeCell is a join', () => {
  property('commutative', fc.tuple(cell, cell), ([a, b]) => {
    expect(mergeCell(a, b)).toEqual(mergeCell(b, a))
  })

  property('associative', fc.tuple(cell, cell, cell), ([a, b, c]) => {
    expect(mergeCell(mergeCell(a, b), c)).toEqual(mergeCell(a, mergeCell(b, c)))
  })

  property('idempotent', cell, (a) => {
    expect(mergeCell(a, a)).toEqual(a)
  })

  property('one of its inputs, with the higher version (nothing invented)', fc.tuple(cell, cell), ([a, b]) => {
    const joined = mergeCell(a, b)
    expect([a, b]).toContainEqual(joined)
    expect(joined.version).toBe(Math.max(a.version, b.version))
  })

  property('the higher version wins whatever the content', fc.tuple(cell, cell), ([a, b]) => {
    fc.pre(a.version !== b.version)
    expect(mergeCell(a, b)).toEqual(a.version > b.version ? a : b)
  })

  /** The tie-break must be a total order, or replicas holding the same two writes could pick differently. */
  property('compareCells is a total order: reflexive, antisymmetric, transitive', fc.tuple(cell, cell, cell), ([a, b, c]) => {
    expect(compareCells(a, { ...a })).toBe(0)
    expect(Math.sign(compareCells(a, b))).toBe(-Math.sign(compareCells(b, a)) || 0)
    if (compareCells(a, b) <= 0 && compareCells(b, c) <= 0) expect(compareCells(a, c)).toBeLessThanOrEqual(0)
  })

  it('breaks a tie between two writes of one version by content, on both sides alike', () => {
    const a: Cell = { count: 2, sum: 5, min: 1, max: 4, maxTs: 9, version: 3 }
    const b: Cell = { count: 2, sum: 7, min: 1, max: 6, maxTs: 9, version: 3 }
    expect(mergeCell(a, b)).toBe(b)
    expect(mergeCell(b, a)).toBe(b)
  })
})

describe('mergeCellMaps is a join', () => {
  property('commutative', fc.tuple(cellMap, cellMap), ([a, b]) => {
    expect(plain(mergeCellMaps(a, b))).toEqual(plain(mergeCellMaps(b, a)))
  })

  property('associative', fc.tuple(cellMap, cellMap, cellMap), ([a, b, c]) => {
    expect(plain(mergeCellMaps(mergeCellMaps(a, b), c))).toEqual(plain(mergeCellMaps(a, mergeCellMaps(b, c))))
  })

  property('idempotent', cellMap, (a) => {
    expect(plain(mergeCellMaps(a, a))).toEqual(plain(a))
  })

  property('any order and any repetition of replicas converge', fc.tuple(fc.array(cellMap, { minLength: 1, maxLength: 5 }), fc.integer()), ([replicas, salt]) => {
    const forward = replicas.reduce((acc, m) => mergeCellMaps(acc, m), new Map<string, Cell>())
    // Another order, with every replica delivered twice.
    const shuffled = [...replicas, ...replicas].map((m, i) => ({ m, k: Math.imul(i + 1, salt | 1) >>> 0 })).sort((x, y) => x.k - y.k)
    const other = shuffled.reduce((acc, { m }) => mergeCellMaps(acc, m), new Map<string, Cell>())
    expect(plain(other)).toEqual(plain(forward))
  })

  property('keeps every key of both sides and leaves its inputs untouched', fc.tuple(cellMap, cellMap), ([a, b]) => {
    const before = [plain(a), plain(b)]
    const joined = mergeCellMaps(a, b)
    expect(new Set(joined.keys())).toEqual(new Set([...a.keys(), ...b.keys()]))
    expect([plain(a), plain(b)]).toEqual(before)
  })
})

describe('cell keys', () => {
  property(
    'round-trip any window, key, start and source, __proto__ included',
    fc.record({
      window: fc.constantFrom('tumbling:10', 'sliding:20:5', 'session:5'),
      key: fc.oneof(fc.constantFrom('__proto__', 'constructor', 'hasOwnProperty', ''), fc.string()),
      start: fc.integer({ min: -1e12, max: 1e12 }),
      source: fc.oneof(fc.constantFrom('__proto__', 'constructor'), fc.string({ minLength: 1 })),
    }),
    ({ window, key, start, source }) => {
      expect(parseCellKey(cellKey(window, key, start, source))).toEqual({ window, key, start, source })
    },
  )

  it('refuses text that is not a cell key', () => {
    for (const text of ['', 'nope', '[1,2,3]', '["w","k","0","s"]', '["w","k",0]', '{"__proto__":1}']) expect(parseCellKey(text)).toBeNull()
  })
})
