/**
 * `latest({ of })`: the value of the window's latest event, by event time.
 *
 * The state is the winning event's `(ts, source, seq, value)` (null when empty). Events are
 * ordered by ts, then source (UTF-16 code unit order), then seq (absent = 0), then value, a total
 * order, so merge (keep the greater) is a lattice join: commutative, associative, idempotent, and
 * the winner does not depend on delivery order.
 *
 * Encoding (format 1): the format byte `0x4c`, then `0` (empty) or `1` followed by ts and value
 * (float64, little-endian), seq (varint, 0 when absent), the source's length in UTF-16 code units
 * (varint, 1 to 1024) and each code unit as a varint (so any string, lone surrogates included,
 * comes back exactly). Decode checks finite numbers (no -0: add stores zero as +0), a safe seq, the lengths and code units, and
 * that no byte trails.
 */
import { type CellEvents, exactAggregate } from './aggregateSet.ts'
import type { StreamEvent } from '../input/event.ts'
import { MAX_NAME_LENGTH } from '../input/event.ts'
import type { Aggregate } from './aggregate.ts'
import { checkAggregateOptions } from './aggregateOptions.ts'
import { ByteReader } from './byteReader.ts'
import { sameBytes } from './byteOrder.ts'
import { ByteWriter } from './byteWriter.ts'
import { eventValue, finiteInput } from './numericInput.ts'

const FORMAT = 0x4c

/**
 * Options of `latest`.
 *
 * @example
 * const options: LatestOptions = { of: (event) => event.value * 1.8 + 32 }
 */
export interface LatestOptions {
  /** The number to keep; default `event.value`. */
  readonly of?: (event: StreamEvent) => number
}

/**
 * The state of `latest`: the winning event's order fields and value, or null.
 *
 * @example
 * const state: LatestState = { ts: 1_000, source: 'd1', seq: 7, value: 21.5 }
 */
export type LatestState = { readonly ts: number; readonly source: string; readonly seq: number; readonly value: number } | null

/**
 * The value of the event with the greatest ts (ties: the greatest source, then seq); null for an
 * empty window. Memory: one event's fields.
 *
 * @example
 * const reading = latest()
 * result.aggregates.reading // 21.5
 */
export function latest(options?: LatestOptions): Aggregate<LatestState, number | null, number> {
  checkAggregateOptions('latest', options, ['of'], false)
  const encode = (s: LatestState): Uint8Array => {
    const writer = new ByteWriter()
    writer.byte(FORMAT)
    writer.byte(s === null ? 0 : 1)
    if (s !== null) {
      writer.float64(s.ts)
      writer.float64(s.value)
      writer.varint(s.seq)
      writer.varint(s.source.length)
      for (let i = 0; i < s.source.length; i++) writer.varint(s.source.charCodeAt(i))
    }
    return writer.finish()
  }
  return exactAggregate({
    name: 'latest',
    configuration: 'latest',
    idempotent: true,
    read: options?.of ?? eventValue,
    checkInput: finiteInput,
    init: () => null,
    add(s, value, event) {
      if (!Number.isFinite(value)) throw new RangeError(`latest: cannot add ${value}, not a finite number`)
      // -0 is 0: ties between equal fields must not be broken by which came first.
      return later(s, { ts: event.ts === 0 ? 0 : event.ts, source: event.source, seq: event.seq ?? 0, value: value === 0 ? 0 : value })
    },
    merge: later,
    mergeInto: later,
    result: (s) => (s === null ? null : s.value),
    encode,
    decode(bytes) {
      const r = new ByteReader(bytes, 'latest state')
      r.format(FORMAT)
      const present = r.byte()
      if (present > 1) throw r.fail(`presence byte ${present} is not 0 or 1`)
      let s: LatestState = null
      if (present === 1) {
        const ts = r.float64('ts')
        const value = r.float64('value')
        if (Object.is(ts, -0) || Object.is(value, -0)) throw r.fail('-0 as ts or value (zero is always +0)')
        const seq = r.varint('seq', Number.MAX_SAFE_INTEGER)
        const length = r.varint('source length', MAX_NAME_LENGTH)
        if (length === 0) throw r.fail('empty source')
        const units: number[] = []
        for (let i = 0; i < length; i++) units.push(r.varint('source code unit', 0xffff))
        s = { ts, source: String.fromCharCode(...units), seq, value }
      }
      r.end()
      return s
    },
    equals: (a, b) => sameBytes(encode(a), encode(b)),
  }, withinCell)
}

/**
 * Why a winning event cannot be one of `cell`'s, or null: its time must lie between the cell's
 * start and its last event time, else it would outrank the window's real latest. Both to the
 * whole ms: a session cell keeps its times floored, and a slice is found by rounding division.
 */
function withinCell(s: LatestState, cell: CellEvents): string | null {
  if (s === null) return null
  if (cell.count === 0) return 'an event in a cell of none'
  if (Math.floor(s.ts) > cell.maxTs) return `event time ${s.ts} is past the cell's last event time ${cell.maxTs}`
  if (Math.ceil(s.ts) < cell.start) return `event time ${s.ts} is before the cell's start ${cell.start}`
  return null
}

/** The later of two states in the total order (ts, source, seq, value). */
function later(a: LatestState, b: LatestState): LatestState {
  if (a === null) return b
  if (b === null) return a
  const order = a.ts - b.ts || (a.source < b.source ? -1 : a.source > b.source ? 1 : 0) || a.seq - b.seq || a.value - b.value
  return order >= 0 ? a : b
}
