import type { WalOp } from '@tidemark/engine'
import fc from 'fast-check'
import {
  ANOMALY_REASONS,
  type Cell,
  type CellGroup,
  type ClockEntry,
  MAX_ABS_TS,
  packCellGroup,
  type StreamEvent,
} from '@tidemark/engine'

/** Any UTF-16 code unit, lone surrogates included: ids are arbitrary JS strings. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit))

/** Names drawn from a small pool (so batches repeat them), any code point, or raw code units. */
export const name = fc.oneof(
  fc.constantFrom('d1', 'd2', 'temp', '\uFEFFbom', 'ключ', '温度', '🌊'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }),
  fc.string({ unit: codeUnit, minLength: 1, maxLength: 6 }),
)

export const streamEvent: fc.Arbitrary<StreamEvent> = fc.record(
  {
    id: name,
    source: name,
    seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
    ts: fc.oneof(
      fc.integer({ min: -1e15, max: 1e15 }),
      fc.double({ min: -MAX_ABS_TS, max: MAX_ABS_TS, noNaN: true }),
    ),
    key: fc.oneof(fc.constant(''), name),
    value: fc.double({ noNaN: true, noDefaultInfinity: true }),
  },
  { requiredKeys: ['id', 'source', 'ts', 'value'] },
)

export const batch = fc.array(streamEvent, { maxLength: 40 })

export const lsn = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })

const anyNumber = fc.oneof(fc.double(), fc.constantFrom(Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0), fc.integer())

const cell: fc.Arbitrary<Cell> = fc.record({
  count: fc.nat(),
  sum: anyNumber,
  min: anyNumber,
  max: anyNumber,
  maxTs: anyNumber,
  version: fc.nat(),
})

/** One source's cells of one window start, packed as the doc and the log carry them; with aggregate states or without. */
const cellGroup = (per: number): fc.Arbitrary<CellGroup> => fc
  .record({
    window: name,
    start: anyNumber,
    source: name,
    cells: fc.array(fc.tuple(fc.oneof(fc.constant(''), name), cell), { maxLength: 6 }),
    states: per === 0 ? fc.constant(undefined) : fc.array(fc.uint8Array({ maxLength: 40 }), { minLength: 18, maxLength: 18 }),
  })
  .map(({ window, start, source, cells, states }) =>
    packCellGroup(
      window,
      start,
      source,
      cells.map(([key]) => key),
      cells.map(([, c]) => c),
      states === undefined || cells.length === 0 ? undefined : cells.map((_, i) => Array.from({ length: per }, (_, a) => states[(i * 3 + a) % 18] as Uint8Array)),
    ),
  )

const clockEntry: fc.Arbitrary<ClockEntry> = fc.record(
  {
    source: name,
    writer: name,
    maxTs: anyNumber,
    prefix: fc.nat(),
    prefixTs: anyNumber,
    provable: fc.boolean(),
    // As the engine writes it: present only on a finished clock.
    finished: fc.constant(true as const),
    version: fc.nat(),
  },
  { requiredKeys: ['source', 'writer', 'maxTs', 'prefix', 'prefixTs', 'provable', 'version'] },
)

const rejected = fc.dictionary(fc.constantFrom(...ANOMALY_REASONS), fc.integer({ min: 1, max: 0xffffffff }), { maxKeys: 4 })

/** Every kind of journal op, with non-finite times and cells where the engine can produce them. */
export const walOp: fc.Arbitrary<WalOp> = fc.oneof(
  fc.record({ kind: fc.constant('ingest' as const), now: anyNumber, events: batch, rejected }),
  fc.record({ kind: fc.constant('advance' as const), to: anyNumber }),
  fc.record({ kind: fc.constant('tick' as const), now: anyNumber }),
  fc.record({ kind: fc.constant('refuse' as const), rejected }),
  fc.record({ kind: fc.constant('finish' as const), source: name, now: anyNumber }),
  fc.record({
    kind: fc.constant('merge' as const),
    now: anyNumber,
    // The groups of one merge all carry as many states per cell (an engine's aggregates), or none do.
    groups: fc.integer({ min: 0, max: 3 }).chain((per) => fc.array(cellGroup(per), { maxLength: 4 })),
    clocks: fc.array(clockEntry, { maxLength: 6 }),
  }),
)
