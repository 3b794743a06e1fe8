import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ANOMALY_REASONS, type LateEvent, type WindowResult } from '@tidemark/engine'
import { ARCHIVE_COLUMNS } from '../src/history/archiveColumns.ts'
import { decodeHistoryRecord, encodeHistoryRecord } from '../src/history/historyRecord.ts'
import { LATE_LANE_COLUMNS } from '../src/history/lateLaneColumns.ts'
import type { ArchivedChange } from '../src/index.ts'
import { name, streamEvent } from './arbitraries.ts'
import { assertFreshSeeded } from '@tidemark/seeded-random/property'

const FILE = 'packages/idb/test/historyRecord.test.ts'

const anyNumber = fc.oneof(fc.double(), fc.constantFrom(Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0), fc.integer())

const lateEvent: fc.Arbitrary<LateEvent> = fc.record(
  { event: streamEvent, window: name, reason: fc.constantFrom(...ANOMALY_REASONS) },
  { requiredKeys: ['event', 'reason'] },
)

const windowResult: fc.Arbitrary<WindowResult> = fc.record({
  window: name,
  key: fc.oneof(fc.constant(''), name),
  start: anyNumber,
  end: anyNumber,
  count: fc.nat(),
  sum: anyNumber,
  min: anyNumber,
  max: anyNumber,
  mean: anyNumber,
  status: fc.constantFrom('provisional', 'on_time', 'corrected'),
  revision: fc.nat(),
  final: fc.boolean(),
  basis: fc.constantFrom('proven', 'derived', 'fallback', 'unknown'),
  pane: fc.record({ timing: fc.constantFrom('early', 'on_time', 'late'), index: fc.nat(), onTimeIndex: fc.integer({ min: -1, max: 1000 }) }),
})

const archivedChange: fc.Arbitrary<ArchivedChange> = fc.record({ type: fc.constantFrom('final', 'retract'), result: windowResult })

/** The same bytes at an odd offset of a larger buffer, as a store may hand them back. */
function unaligned(bytes: Uint8Array): Uint8Array {
  const buffer = new Uint8Array(bytes.length + 3)
  buffer.set(bytes, 3)
  return buffer.subarray(3)
}

describe('history records', () => {
  it('round-trip late events exactly: absent fields stay absent, lone surrogates and -0 survive', () => {
    assertFreshSeeded(
      fc.property(fc.nat({ max: 2 ** 40 }), fc.array(lateEvent, { maxLength: 30 }), (first, entries) => {
        const bytes = encodeHistoryRecord(LATE_LANE_COLUMNS, first, entries)
        expect(decodeHistoryRecord(LATE_LANE_COLUMNS, bytes)).toEqual({ ok: true, first, entries })
        expect(decodeHistoryRecord(LATE_LANE_COLUMNS, unaligned(bytes))).toEqual({ ok: true, first, entries })
      }),
      FILE,
    )
  })

  it('round-trip archived changes exactly', () => {
    assertFreshSeeded(
      fc.property(fc.nat({ max: 2 ** 40 }), fc.array(archivedChange, { maxLength: 30 }), (first, entries) => {
        const bytes = encodeHistoryRecord(ARCHIVE_COLUMNS, first, entries)
        const read = decodeHistoryRecord(ARCHIVE_COLUMNS, unaligned(bytes))
        expect(read).toEqual({ ok: true, first, entries })
        if (read.ok) for (const [i, change] of read.entries.entries()) expect(Object.is(change.result.start, entries[i]?.result.start)).toBe(true)
      }),
      FILE,
    )
  })

  it('reports any flipped byte or truncation with a reason and never throws; refuses a record of the other kind', () => {
    const entries: LateEvent[] = [
      { event: { id: 'a', source: 'd1', seq: 3, ts: 5, value: 1, key: 'k' }, window: 'tumbling:10', reason: 'beyond_lateness' },
      { event: { id: 'b\uD800', source: 'd1', ts: -0, value: 2 }, reason: 'beyond_lateness' },
    ]
    const bytes = encodeHistoryRecord(LATE_LANE_COLUMNS, 7, entries)
    for (let at = 0; at < bytes.length; at++) {
      const damaged = bytes.slice()
      damaged[at] = (damaged[at] as number) ^ 0x5a
      expect(decodeHistoryRecord(LATE_LANE_COLUMNS, damaged)).toMatchObject({ ok: false, reason: expect.any(String) })
      expect(decodeHistoryRecord(LATE_LANE_COLUMNS, bytes.subarray(0, at))).toMatchObject({ ok: false })
    }
    expect(decodeHistoryRecord(ARCHIVE_COLUMNS, bytes)).toEqual({ ok: false, reason: 'record kind 1 is not archive' })
  })
})
