import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { WindowResult } from '@tidemark/engine'
import { assertSeeded } from '@tidemark/seeded-random/property'
import { batchProblem, decodeEvents, encodeEvents } from '../src/protocol/eventColumns.ts'
import { decodeRows, encodeRows, type RowKind, rowsProblem } from '../src/protocol/windowRows.ts'
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

const result: fc.Arbitrary<WindowResult> = fc.record({
  window: fc.constantFrom('tumbling:60000', 'sliding:60000:10000', 'session:5000'),
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
})
const kind = fc.constantFrom<RowKind>('provisional', 'on_time', 'correction', 'final', 'retract', 'history', 'history-reset')

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
  it('carry every field of every result, in order', () => {
    assertSeeded(
      fc.property(fc.array(fc.record({ kind, result }), { maxLength: 40 }), (rows) => {
        const encoded = encodeRows(rows)
        expect(rowsProblem(encoded)).toBeNull()
        expect(decodeRows(encoded)).toEqual(rows)
      }),
      FILE,
      'carry every field of every result, in order',
      200,
    )
  })

  it('keep NaN, infinities and negative zero as they are', () => {
    const special: WindowResult = {
      window: 'tumbling:1000', key: 'k', start: -0, end: 1000, count: 0, sum: Number.NaN, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, mean: -0,
      status: 'provisional', revision: 0, final: false, basis: 'unknown',
    }
    const [row] = decodeRows(encodeRows([{ kind: 'provisional', result: special }]))
    expect(Object.is(row?.result.start, -0) && Object.is(row?.result.mean, -0) && Number.isNaN(row?.result.sum)).toBe(true)
    expect([row?.result.min, row?.result.max]).toEqual([Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])
  })

  it('says what is wrong with rows a host sent', () => {
    expect(rowsProblem({ strings: [], ints: new Uint32Array(3), nums: new Float64Array(0) })).toBe('the row columns have different lengths')
    expect(rowsProblem({ strings: ['w'], ints: Uint32Array.of(0, 1, 0, 0), nums: new Float64Array(7) })).toBe('a row names a string out of range')
    expect(rowsProblem({ strings: ['w'], ints: Uint32Array.of(0, 0, 7, 0), nums: new Float64Array(7) })).toBe('a row has bad flags 7')
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
})
