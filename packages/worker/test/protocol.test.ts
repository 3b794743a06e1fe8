import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { isOverflowError, OverflowError, type PaneInfo, type PaneTiming, type WindowResult } from '@tidemark/engine'
import { isLogConfigurationError, isQuotaError, LogConfigurationError, QuotaError } from '@tidemark/idb'
import { assertSeeded } from '@tidemark/seeded-random/property'
import { batchProblem, decodeEvents, encodeEvents } from '../src/protocol/eventColumns.ts'
import { decodeRows, encodeRows, type RowKind, rowsProblem, uncloneableAggregate, type WindowRow } from '../src/protocol/windowRows.ts'
import { envelope, openEnvelope } from '../src/protocol/tabChannel.ts'
import { errorFromWire, wireError } from '../src/protocol/messages.ts'

const FILE = 'packages/worker/test/protocol.test.ts'

const name = fc.string({ minLength: 1, maxLength: 12 })
const event = fc.record(
  {
    id: name,
    source: fc.constantFrom('d1', 'd2', 'device-ü', ''),
    seq: fc.integer({ min: 1, max: 2 ** 53 - 1 }),
    ts: fc.double({ noNaN: false }),
    key: fc.constantFrom('temp', '', 'rpm'),
    value: fc.double(),
  },
  { requiredKeys: ['id', 'source', 'ts', 'value'] },
)

const pane: fc.Arbitrary<PaneInfo> = fc.oneof(
  // As the engine makes them: early panes have no on-time index (-1).
  fc.record({ timing: fc.constant('early' as const), index: fc.nat({ max: 2_000 }), onTimeIndex: fc.constant(-1) }),
  fc.record({ timing: fc.constant('on_time' as const), index: fc.nat({ max: 2_000 }), onTimeIndex: fc.constant(0) }),
  fc.record({ timing: fc.constant('late' as const), index: fc.nat({ max: 2_000 }), onTimeIndex: fc.nat({ max: 200 }) }),
  // Any index a long-lived window can reach, past 32 bits, and -1 under every timing.
  fc.record({
    timing: fc.constantFrom<PaneTiming>('early', 'on_time', 'late'),
    index: fc.maxSafeNat(),
    onTimeIndex: fc.integer({ min: -1, max: Number.MAX_SAFE_INTEGER }),
  }),
)

const result: fc.Arbitrary<WindowResult> = fc.record({
  window: fc.constantFrom('tumbling:60000', 'sliding:60000:10000', 'session:5000', 'cumulating:86400000:3600000'),
  key: fc.string({ maxLength: 8 }),
  start: fc.integer({ min: -1e12, max: 1e12 }),
  end: fc.integer({ min: -1e12, max: 1e12 }),
  count: fc.nat(),
  sum: fc.double(),
  min: fc.double(),
  max: fc.double(),
  mean: fc.double(),
  status: fc.constantFrom('provisional', 'on_time', 'corrected'),
  revision: fc.nat({ max: 2 ** 32 - 1 }),
  final: fc.boolean(),
  basis: fc.constantFrom('proven', 'derived', 'fallback', 'unknown'),
  pane,
})
/** `result` with `aggregates` holding `values` under `names`, own fields even for '__proto__'. */
function withAggregateValues(result: WindowResult, names: readonly string[], values: readonly unknown[]): WindowResult {
  const aggregates: Record<string, unknown> = {}
  names.forEach((name, i) => {
    Object.defineProperty(aggregates, name, { value: values[i], enumerable: true, writable: true, configurable: true })
  })
  return { ...result, aggregates } as WindowResult
}

const kind = fc.constantFrom<RowKind>('provisional', 'on_time', 'correction', 'final', 'retract', 'history', 'history-reset')
const row: fc.Arbitrary<WindowRow> = fc.oneof(fc.record({ kind, result }), fc.record({ kind, result, previous: fc.constant(true) }))

describe('event batches', () => {
  it('carry well-formed events as columns, field for field', () => {
    assertSeeded(
      fc.property(fc.array(event, { maxLength: 50 }), (events) => {
        const batch = encodeEvents(events)
        expect(batch.form).toBe('columns')
        expect(batchProblem(batch)).toBeNull()
        expect(decodeEvents(batch)).toEqual(events)
      }),
      FILE,
      'carry well-formed events as columns, field for field',
      200,
    )
  })

  it('carry a batch with any event the columns cannot keep unchanged as the objects themselves', () => {
    const odd: unknown[] = [
      null,
      42,
      { id: 7, source: 'd1', ts: 1, value: 1 },
      { id: 'a', source: 'd1', ts: '1', value: 1 },
      { id: 'a', source: 'd1', ts: 1, value: 1, seq: 0 },
      { id: 'a', source: 'd1', ts: 1, value: 1, seq: Number.NaN },
      { id: 'a', source: 'd1', ts: 1, value: 1, seq: 1.5 },
      { id: 'a', source: 'd1', ts: 1, value: 1, key: 3 },
    ]
    for (const bad of odd) {
      const events = [{ id: 'ok', source: 'd1', seq: 1, ts: 1, value: 1 }, bad]
      const batch = encodeEvents(events)
      expect(batch.form, JSON.stringify(bad)).toBe('objects')
      expect(decodeEvents(batch)).toEqual(events)
    }
  })

  it('says what is wrong with a batch a page sent', () => {
    expect(batchProblem(null)).toBe('the batch is not an object')
    expect(batchProblem({ form: 'rows' })).toBe('unknown batch form rows')
    expect(batchProblem({ form: 'objects' })).toBe('the object form has no events array')
    expect(batchProblem({ form: 'columns', ids: ['a'], strings: ['d1'], ints: new Int32Array(2), nums: new Float64Array(2) })).toBe(
      'the columns have different lengths',
    )
    expect(batchProblem({ form: 'columns', ids: ['a'], strings: ['d1'], ints: Int32Array.of(0, 5), nums: new Float64Array(3) })).toBe(
      'string index 5 is out of range',
    )
    expect(batchProblem({ form: 'columns', ids: ['a'], strings: ['d1'], ints: Int32Array.of(-1, -1), nums: new Float64Array(3) })).toBe(
      'string index -1 is out of range',
    )
  })
})

describe('window rows', () => {
  it('carry every field of every result (pane included), and whether the change had a previous, in order', () => {
    assertSeeded(
      fc.property(fc.array(row, { maxLength: 40 }), (rows) => {
        const encoded = encodeRows(rows)
        expect(rowsProblem(encoded)).toBeNull()
        expect(decodeRows(encoded)).toEqual(rows)
      }),
      FILE,
      'carry every field of every result, in order',
      200,
    )
  })

  it('carry each result\'s aggregates as the engine shows them: numbers, arrays, null, NaN and -0, a user aggregate\'s object; beside rows without any', () => {
    const number = fc.oneof(fc.double(), fc.constantFrom(Number.NaN, -0, Number.POSITIVE_INFINITY))
    const value = fc.oneof(fc.constant(null), number, fc.array(number, { maxLength: 5 }), fc.record({ top: fc.string(), counts: fc.array(fc.nat(), { maxLength: 3 }) }), fc.constant('text'))
    const names = fc.uniqueArray(fc.constantFrom('p', 'devices', 'last', 'spread', '__proto__', 'ü'), { minLength: 1, maxLength: 4 })
    assertSeeded(
      fc.property(
        names.chain((list) =>
          fc.array(
            fc.record({
              kind,
              result: fc.oneof(result, fc.tuple(result, fc.tuple(...list.map(() => value))).map(([r, values]) => withAggregateValues(r, list, values))),
            }),
            { maxLength: 30 },
          ),
        ),
        (rows) => {
          const encoded = encodeRows(rows)
          expect(rowsProblem(encoded)).toBeNull()
          const decoded = decodeRows(encoded)
          expect(decoded).toEqual(rows)
          // '__proto__' is an own field, as in the engine's results.
          decoded.forEach((row, i) => {
            const given = (rows[i]?.result as { aggregates?: object } | undefined)?.aggregates
            const got = (row.result as { aggregates?: object }).aggregates
            expect(got === undefined ? undefined : Object.keys(got)).toEqual(given === undefined ? undefined : Object.keys(given))
          })
        },
      ),
      FILE,
      'carry each result\'s aggregates',
      200,
    )
  })

  it('name the aggregate and window of the first result the structured clone refuses, counting rows without aggregates', () => {
    const base: WindowResult = {
      window: 'session:5000', key: 'k', start: 0, end: 5000, count: 1, sum: 1, min: 1, max: 1, mean: 1,
      status: 'provisional', revision: 0, final: false, basis: 'unknown', pane: { timing: 'early', index: 0, onTimeIndex: -1 },
    }
    const names = ['p', 'label']
    const fn = () => 1
    const rows: WindowRow[] = [
      { kind: 'history-reset', result: { ...base, key: 'bare' } },
      { kind: 'provisional', result: withAggregateValues({ ...base, key: 'fine' }, names, [[1, 2], { text: 'ok' }]) },
      { kind: 'history-reset', result: { ...base, key: 'bare-again' } },
      { kind: 'provisional', result: withAggregateValues({ ...base, key: 'bad', start: 7_000 }, names, [[3], { format: fn }]) },
      { kind: 'provisional', result: withAggregateValues({ ...base, key: 'worse' }, names, [fn, null]) },
    ]
    expect(uncloneableAggregate(encodeRows(rows))).toMatch(/^aggregate "label" of window "session:5000", key "bad", start 7000: DataCloneError: /)
    expect(uncloneableAggregate(encodeRows(rows.slice(0, 3)))).toBeNull()
    expect(uncloneableAggregate(encodeRows([rows[0] as WindowRow]))).toBeNull()
  })

  it('keep NaN, infinities and negative zero as they are', () => {
    const special: WindowResult = {
      window: 'tumbling:1000', key: 'k', start: -0, end: 1000, count: 0, sum: Number.NaN, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, mean: -0,
      status: 'provisional', revision: 0, final: false, basis: 'unknown', pane: { timing: 'early', index: 0, onTimeIndex: -1 },
    }
    const [decoded] = decodeRows(encodeRows([{ kind: 'provisional', result: special }]))
    expect(Object.is(decoded?.result.start, -0) && Object.is(decoded?.result.mean, -0) && Number.isNaN(decoded?.result.sum)).toBe(true)
    expect([decoded?.result.min, decoded?.result.max]).toEqual([Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])
  })

  it('carry the panes a window goes through: early ones with onTimeIndex -1, the on-time one, late ones; and the windows of a cumulating spec by their end', () => {
    const day = 1_700_006_400_000
    const base = { window: 'cumulating:86400000:3600000', key: 'temp', start: day, count: 1, sum: 2, min: 2, max: 2, mean: 2, final: false, basis: 'derived' } as const
    const results: WindowResult[] = [
      { ...base, end: day + 3_600_000, status: 'provisional', revision: 0, basis: 'unknown', pane: { timing: 'early', index: 0, onTimeIndex: -1 } },
      { ...base, end: day + 7_200_000, status: 'provisional', revision: 0, basis: 'unknown', pane: { timing: 'early', index: 3, onTimeIndex: -1 } },
      { ...base, end: day + 3_600_000, status: 'on_time', revision: 0, pane: { timing: 'on_time', index: 1, onTimeIndex: 0 } },
      { ...base, end: day + 3_600_000, status: 'corrected', revision: 1, pane: { timing: 'late', index: 2, onTimeIndex: 1 } },
      { ...base, end: day + 86_400_000, status: 'corrected', revision: 5_000, pane: { timing: 'late', index: 70_000, onTimeIndex: 5_000 } },
    ]
    const rows: WindowRow[] = results.map((result, i) => (i === 3 ? { kind: 'correction', result, previous: true } : { kind: 'provisional', result }))
    const decoded = decodeRows(encodeRows(rows))
    expect(decoded).toEqual(rows)
    expect(decoded.map((r) => [r.result.end - day, r.result.pane.onTimeIndex])).toEqual([
      [3_600_000, -1],
      [7_200_000, -1],
      [3_600_000, 0],
      [3_600_000, 1],
      [86_400_000, 5_000],
    ])
    // As in the engine, a mirror of many windows holds few pane infos: equal small ones are one object.
    const again = decodeRows(encodeRows(rows))
    expect(again[0]?.result.pane).toBe(decoded[0]?.result.pane)
    expect(Object.isFrozen(again[4]?.result.pane)).toBe(true)
  })

  it('says what is wrong with rows a host sent', () => {
    const nums = (index: number, onTimeIndex: number) => Float64Array.of(0, 1, 0, 0, 0, 0, 0, index, onTimeIndex)
    expect(rowsProblem({ strings: [], ints: new Uint32Array(3), nums: new Float64Array(0) })).toBe('the row columns have different lengths')
    expect(rowsProblem({ strings: ['w'], ints: Uint32Array.of(0, 0, 0, 0), nums: new Float64Array(7) })).toBe('the row columns have different lengths')
    expect(rowsProblem({ strings: ['w'], ints: Uint32Array.of(0, 1, 0, 0), nums: nums(0, -1) })).toBe('a row names a string out of range')
    expect(rowsProblem({ strings: ['w'], ints: Uint32Array.of(0, 0, 7, 0), nums: nums(0, -1) })).toBe('a row has bad flags 7')
    expect(rowsProblem({ strings: ['w'], ints: Uint32Array.of(0, 0, 3 << 8, 0), nums: nums(0, -1) })).toBe('a row has bad flags 768')
    expect(rowsProblem({ strings: ['w'], ints: Uint32Array.of(0, 0, 1 << 12, 0), nums: nums(0, -1) })).toBe('a row has bad flags 4096')
    // A row with aggregates: its values must be in the column, tag by tag.
    const withAggregates = (values: number[], others: unknown[] = []) => ({
      strings: ['w'],
      ints: Uint32Array.of(0, 0, 1 << 11, 0),
      nums: nums(0, -1),
      aggregates: { names: ['devices', 'p'], values: Float64Array.from(values), others },
    })
    expect(rowsProblem({ strings: ['w'], ints: Uint32Array.of(0, 0, 1 << 11, 0), nums: nums(0, -1) })).toBe('1 rows have aggregates and the frame has no aggregate column')
    expect(rowsProblem(withAggregates([-2, 3, 2, 12, 40]))).toBeNull()
    expect(rowsProblem(withAggregates([-2, 3, 2, 12]))).toBe('the aggregate column does not hold 1 rows')
    expect(rowsProblem(withAggregates([-2, 3]))).toBe('the aggregate column does not hold 1 rows')
    expect(rowsProblem(withAggregates([-2, 3, -1, 7]))).toBe('the aggregate column does not hold 1 rows')
    expect(rowsProblem(withAggregates([-2, 3, -4]))).toBe('the aggregate column has a bad tag -4')
    expect(rowsProblem(withAggregates([-2, 3, 1.5, 0]))).toBe('the aggregate column has a bad tag 1.5')
    expect(rowsProblem(withAggregates([-2, 3, -3, 1], [{ a: 1 }]))).toBe('the aggregate column names no value 1')
    expect(rowsProblem({ ...withAggregates([-1, -1]), aggregates: { names: ['p'], values: [-1], others: [] } })).toBe('the aggregate column lacks names, values or others')
    expect(rowsProblem({ strings: ['w'], ints: Uint32Array.of(0, 0, 0, 0), nums: nums(0, -1) })).toBeNull()
    expect(rowsProblem({ strings: ['w'], ints: Uint32Array.of(0, 0, 0, 0), nums: nums(0, -2) })).toBe('a row has a bad pane (index 0, onTimeIndex -2)')
    expect(rowsProblem({ strings: ['w'], ints: Uint32Array.of(0, 0, 0, 0), nums: nums(-1, 0) })).toBe('a row has a bad pane (index -1, onTimeIndex 0)')
    expect(rowsProblem({ strings: ['w'], ints: Uint32Array.of(0, 0, 0, 0), nums: nums(1.5, 0) })).toBe('a row has a bad pane (index 1.5, onTimeIndex 0)')
  })
})

describe('tab channel envelopes', () => {
  it('open only envelopes of this protocol', () => {
    const sent = envelope('host', 'tab-1', 3, { t: 'ack', frame: 9 })
    expect(openEnvelope(structuredClone(sent))).toEqual(sent)
    expect(openEnvelope({ ...sent, v: 99 })).toBeNull()
    expect(openEnvelope({ ...sent, m: null })).toBeNull()
    expect(openEnvelope('hello')).toBeNull()
  })

  it('carry errors by name and message', () => {
    const wire = wireError(new RangeError('too far'))
    expect(wire).toEqual({ name: 'RangeError', message: 'too far' })
    const error = errorFromWire(structuredClone(wire))
    expect([error.name, error.message]).toEqual(['RangeError', 'too far'])
    expect(wireError('plain')).toEqual({ name: 'Error', message: 'plain' })
  })

  it("carry an error's own plain fields, so the type guards and their fields work on the other side", () => {
    const overflow = errorFromWire(structuredClone(wireError(new OverflowError('engine', '3 events refused'))))
    expect([isOverflowError(overflow), (overflow as OverflowError).buffer]).toEqual([true, 'engine'])
    const configuration = errorFromWire(structuredClone(wireError(new LogConfigurationError('tumbling 1000', 'tumbling 5000'))))
    expect(isLogConfigurationError(configuration)).toBe(true)
    expect(configuration).toMatchObject({ logged: 'tumbling 1000', expected: 'tumbling 5000' })
    // A receipt's `durable` rejected by a full quota, on a page.
    expect(isQuotaError(errorFromWire(structuredClone(wireError(new QuotaError('tidemark: storage quota exceeded')))))).toBe(true)
    // Only strings, numbers, booleans and null cross: a field holding an object or a function stays behind.
    const odd = Object.assign(new Error('odd'), { count: 2, flag: false, none: null, nested: { a: 1 }, run: () => 1 })
    expect(wireError(odd)).toEqual({ name: 'Error', message: 'odd', fields: { count: 2, flag: false, none: null } })
  })
})
