import type { WalOp } from '@tidemark/engine'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { packCellGroup, type StreamEvent } from '@tidemark/engine'
import { crc32 } from '../src/wal/crc32.ts'
import { decodeCheckpoint, decodeWalRecord, encodeCheckpoint, encodeWalRecord } from '../src/index.ts'
import { lsn, walOp } from './arbitraries.ts'
import { assertFreshSeeded } from '@tidemark/seeded-random/property'
import { ingestOp } from './walOps.ts'

const FILE = 'packages/idb/test/walCodec.test.ts'

const sample: StreamEvent[] = [
  { id: '\uFEFFbom-first', source: '🌊', ts: 1.5, key: 'ключ', value: 0 },
  { id: 'd1-1', source: 'd1', seq: 1, ts: 1_700_000_000_000, key: 'temp', value: 21.5 },
  { id: 'd1-2', source: 'd1', ts: -86_400_000, value: -0.25 },
  { id: 'lone\uD800', source: '\uDC00d2', seq: 9, ts: 0, key: '', value: 1e300 },
]

const TOMBSTONE = { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, maxTs: Number.NEGATIVE_INFINITY, version: 7 }
const CLOCK = { source: 'd1', writer: 'r1', maxTs: 10, prefix: 3, prefixTs: Number.NEGATIVE_INFINITY, provable: false, version: 4 }

/** The same bytes at an odd offset inside a larger buffer, as a view into stored data may be. */
function unaligned(bytes: Uint8Array): Uint8Array {
  const host = new Uint8Array(bytes.length + 7)
  host.set(bytes, 3)
  return host.subarray(3, 3 + bytes.length)
}

describe('crc32', () => {
  it('matches the standard check value and composes over ranges', () => {
    const text = new TextEncoder().encode('123456789')
    expect(crc32(text)).toBe(0xcbf43926)
    expect(crc32(text, 4, 9, crc32(text, 0, 4))).toBe(0xcbf43926)
  })
})

describe('walCodec: log records', () => {
  it('round-trips a batch with absent seq and key, negative ts, lone surrogates and a leading BOM', () => {
    const result = decodeWalRecord(encodeWalRecord(7, ingestOp(sample, 1_700_000_000_123)))
    expect(result).toEqual({ ok: true, lsn: 7, op: ingestOp(sample, 1_700_000_000_123) })
    if (!result.ok || result.op.kind !== 'ingest') return
    expect('seq' in (result.op.events[2] as StreamEvent)).toBe(false)
    expect('key' in (result.op.events[2] as StreamEvent)).toBe(false)
  })

  it('round-trips every kind of op, also from unaligned views', () => {
    assertFreshSeeded(
      fc.property(lsn, walOp, (recordLsn, op) => {
        const bytes = encodeWalRecord(recordLsn, op)
        expect(decodeWalRecord(bytes)).toEqual({ ok: true, lsn: recordLsn, op })
        expect(decodeWalRecord(unaligned(bytes))).toEqual({ ok: true, lsn: recordLsn, op })
      }),
      FILE,
    )
  })

  it('keeps rejected counts, a merge with tombstone cells and an advance to +Infinity exactly', () => {
    const ingest: WalOp = { kind: 'ingest', now: 5, events: sample.slice(0, 1), rejected: { invalid_ts: 3, missing_id: 1 } }
    const merge: WalOp = {
      kind: 'merge',
      now: 9,
      groups: [packCellGroup('tumbling:60000', -60_000, 'd1', ['__proto__'], [TOMBSTONE])],
      clocks: [CLOCK],
    }
    const advance: WalOp = { kind: 'advance', to: Number.POSITIVE_INFINITY }
    for (const op of [ingest, merge, advance, { kind: 'tick', now: -0 } as const]) {
      expect(decodeWalRecord(encodeWalRecord(2, op))).toEqual({ ok: true, lsn: 2, op })
    }
  })

  it('copies a group\'s columns into the record whole: 8 bytes per value, a key reference per cell', () => {
    const cells = Array.from({ length: 100 }, (_, i) => ({ count: 1, sum: i, min: i, max: i, maxTs: i, version: 1 }))
    const keys = cells.map((_, i) => `k${i}`)
    const one = encodeWalRecord(1, { kind: 'merge', now: 0, groups: [packCellGroup('w', 0, 'd1', keys.slice(0, 1), cells.slice(0, 1))], clocks: [] })
    const hundred = encodeWalRecord(1, { kind: 'merge', now: 0, groups: [packCellGroup('w', 0, 'd1', keys, cells)], clocks: [] })
    // Per extra cell: 6 values, a key reference, the key's length and its text.
    expect(hundred.length - one.length).toBe(99 * (6 * 8 + 4 + 4) + keys.slice(1).reduce((sum, key) => sum + key.length, 0))
  })

  it('refuses to encode a group whose columns do not fit its keys', () => {
    const group = { window: 'w', start: 0, source: 'd1', keys: ['a', 'b'], columns: new Float64Array(6) }
    expect(() => encodeWalRecord(1, { kind: 'merge', now: 0, groups: [group], clocks: [] })).toThrow(RangeError)
  })

  it('refuses to encode rejected counts that are not known reasons with 32-bit counts', () => {
    const op = (rejected: Record<string, number>): WalOp => ({ kind: 'ingest', now: 0, events: [], rejected })
    expect(() => encodeWalRecord(1, op({ not_a_reason: 1 }))).toThrow(RangeError)
    expect(() => encodeWalRecord(1, op({ invalid_ts: 2 ** 32 }))).toThrow(RangeError)
  })

  it('stores a repeated string once', () => {
    const many = Array.from({ length: 100 }, (_, i): StreamEvent => ({ id: `e${i}`, source: 'same-source', key: 'same-key', ts: i, value: i }))
    const once = encodeWalRecord(1, ingestOp(many.slice(0, 1))).length
    const hundred = encodeWalRecord(1, ingestOp(many)).length
    // 36 bytes of columns + a 4-byte length + the id per extra event; source and key add nothing.
    expect(hundred - once).toBe(99 * 40 + many.slice(1).reduce((sum, e) => sum + e.id.length, 0))
  })

  it('reports every single changed byte of a record as corrupt', () => {
    const merge: WalOp = { kind: 'merge', now: 9, groups: [packCellGroup('tumbling:60000', -60_000, 'd1', ['__proto__'], [TOMBSTONE])], clocks: [CLOCK] }
    const sketched: WalOp = {
      kind: 'merge',
      now: 9,
      groups: [packCellGroup('tumbling:60000', 0, 'd1', ['a', 'b'], [TOMBSTONE, TOMBSTONE], [[new Uint8Array([0x51, 0, 0, 0])], [new Uint8Array([0x51, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])]])],
      clocks: [CLOCK],
    }
    for (const bytes of [encodeWalRecord(3, ingestOp(sample)), encodeWalRecord(4, merge), encodeWalRecord(5, sketched)]) {
      for (let at = 0; at < bytes.length; at++) {
        const damaged = bytes.slice()
        damaged[at] = (damaged[at] as number) ^ 0x5a
        const result = decodeWalRecord(damaged)
        expect(result.ok, `byte ${at}`).toBe(false)
      }
    }
  })

  it('reports random damage with a reason, never throws, and keeps lsn, kind and count while the header is intact', () => {
    assertFreshSeeded(
      fc.property(
        lsn,
        walOp,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 255 })), { minLength: 1, maxLength: 4 }),
        (recordLsn, op, flips) => {
          const bytes = encodeWalRecord(recordLsn, op)
          const damaged = bytes.slice()
          for (const [position, mask] of flips) {
            const at = position % damaged.length
            damaged[at] = (damaged[at] as number) ^ mask
          }
          if (damaged.every((byte, i) => byte === bytes[i])) return // flips cancelled out
          const result = decodeWalRecord(damaged)
          expect(result.ok).toBe(false)
          if (result.ok) return
          expect(result.reason.length).toBeGreaterThan(0)
          const headerIntact = damaged.subarray(0, 64).every((byte, i) => byte === bytes[i])
          if (!headerIntact) expect(result.kind).toBeUndefined()
          else if (op.kind === 'ingest') {
            expect(result).toMatchObject({ lsn: recordLsn, kind: 'ingest', eventCount: op.events.length, reason: 'payload checksum mismatch' })
          } else expect(result).toMatchObject({ lsn: recordLsn, kind: op.kind, reason: 'payload checksum mismatch' })
        },
      ),
      FILE,
    )
  })

  it('rejects truncated, extended and foreign bytes with a reason', () => {
    const bytes = encodeWalRecord(5, ingestOp(sample))
    expect(decodeWalRecord(bytes.subarray(0, 10))).toMatchObject({ ok: false, reason: expect.stringContaining('shorter') })
    expect(decodeWalRecord(bytes.subarray(0, bytes.length - 1))).toMatchObject({ ok: false, lsn: 5, kind: 'ingest', eventCount: 4 })
    const longer = new Uint8Array(bytes.length + 1)
    longer.set(bytes)
    expect(decodeWalRecord(longer)).toMatchObject({ ok: false, lsn: 5, eventCount: 4 })
    expect(decodeWalRecord(new TextEncoder().encode('{"not":"a record at all, just some json"}'))).toMatchObject({
      ok: false,
      reason: expect.stringContaining('magic'),
    })
    expect(decodeWalRecord(encodeCheckpoint({ upToLsn: 1, state: new Uint8Array(64) }))).toMatchObject({ ok: false })
  })

  it('refuses to encode an lsn that is not a positive safe integer', () => {
    expect(() => encodeWalRecord(0, ingestOp(sample))).toThrow(RangeError)
    expect(() => encodeWalRecord(1.5, ingestOp(sample))).toThrow(RangeError)
  })
})

describe('walCodec: checkpoint envelope', () => {
  it('round-trips state bytes and the lsn', () => {
    assertFreshSeeded(
      fc.property(fc.nat(), fc.uint8Array({ maxLength: 300 }), (upToLsn, state) => {
        expect(decodeCheckpoint(encodeCheckpoint({ upToLsn, state }))).toEqual({ ok: true, checkpoint: { upToLsn, state } })
        expect(decodeCheckpoint(unaligned(encodeCheckpoint({ upToLsn, state })))).toEqual({ ok: true, checkpoint: { upToLsn, state } })
      }),
      FILE,
    )
  })

  it('reports every single changed byte as corrupt, with upToLsn while the header is intact', () => {
    const bytes = encodeCheckpoint({ upToLsn: 12, state: new TextEncoder().encode('lattice state') })
    for (let at = 0; at < bytes.length; at++) {
      const damaged = bytes.slice()
      damaged[at] = (damaged[at] as number) ^ 0x01
      const result = decodeCheckpoint(damaged)
      expect(result.ok, `byte ${at}`).toBe(false)
      if (at >= 32) expect(result).toMatchObject({ upToLsn: 12, reason: 'payload checksum mismatch' })
    }
  })
})
