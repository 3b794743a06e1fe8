import type { StreamEvent } from '@tidemark/engine'
import { crc32 } from '../src/wal/crc32.ts'
import { StringTable } from '../src/wal/walStrings.ts'

/**
 * What the format-1 encoder (before ops were journaled) wrote for a batch, kept here to
 * test that such records still read back: a 40-byte header, then the event columns and
 * the string table, with no processing time and no op kind.
 */
export function encodeFormat1Batch(lsn: number, events: readonly StreamEvent[]): Uint8Array<ArrayBuffer> {
  const n = events.length
  const table = new StringTable()
  const refs = new Uint32Array(3 * n)
  events.forEach((event, i) => {
    refs[i] = table.add(event.id)
    refs[n + i] = table.intern(event.source)
    refs[2 * n + i] = event.key === undefined ? 0xffffffff : table.intern(event.key)
  })
  const s = table.lengths.length
  const utf8At = 40 + 36 * n + 4 * s
  const buffer = new ArrayBuffer(utf8At + table.utf8Bytes + 2 * table.utf16Units)
  const bytes = new Uint8Array(buffer)
  const f64 = new Float64Array(buffer, 40, 3 * n)
  events.forEach((event, i) => {
    f64[i] = event.ts
    f64[n + i] = event.value
    f64[2 * n + i] = event.seq ?? Number.NaN
  })
  new Uint32Array(buffer, 40 + 24 * n, 3 * n).set(refs)
  new Uint32Array(buffer, 40 + 36 * n, s).set(table.lengths)
  table.writeText(bytes, utf8At)
  const view = new DataView(buffer)
  view.setUint32(0, 0x4c574d54, true)
  view.setUint16(4, 1, true)
  view.setUint16(6, 0, true)
  view.setFloat64(8, lsn, true)
  view.setUint32(16, n, true)
  view.setUint32(20, s, true)
  view.setUint32(24, table.utf8Bytes, true)
  view.setUint32(28, table.utf16Units, true)
  view.setUint32(32, crc32(bytes, 40), true)
  view.setUint32(36, crc32(bytes, 0, 36), true)
  return bytes
}
