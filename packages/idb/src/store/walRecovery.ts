import { decodeCheckpoint } from '../checkpoint/checkpointEnvelope.ts'
import { decodeHistoryRecord } from '../history/historyRecord.ts'
import { LATE_LANE_COLUMNS } from '../history/lateLaneColumns.ts'
import type { Checkpoint, CorruptRecord, LateLaneRecord, WalRecord } from '../persistence/persistence.ts'
import { notBytes, storedBytes } from '../persistence/storedBytes.ts'
import { decodeWalRecord } from '../wal/walCodec.ts'

/** A value as a store returned it, under its key (the lsn, or the checkpoint's upToLsn). */
export interface StoredRecord {
  readonly key: number
  readonly value: unknown
}

/**
 * Checks one stored checkpoint: its envelope must verify and carry the key it is stored under.
 */
export function readCheckpoint(
  record: StoredRecord,
): { readonly ok: true; readonly checkpoint: Checkpoint } | { readonly ok: false; readonly corrupt: CorruptRecord } {
  const key = String(record.key)
  const bytes = storedBytes(record.value)
  if (bytes === null) {
    return { ok: false, corrupt: { store: 'checkpoints', key, reason: notBytes(record.value) } }
  }
  const result = decodeCheckpoint(bytes)
  if (!result.ok) return { ok: false, corrupt: { store: 'checkpoints', key, reason: result.reason } }
  if (result.checkpoint.upToLsn !== record.key) {
    const reason = `envelope says upToLsn ${result.checkpoint.upToLsn}, stored under ${key}`
    return { ok: false, corrupt: { store: 'checkpoints', key, reason } }
  }
  return result
}

/**
 * Decodes log records (in lsn order), appending a report to `corrupt` for each one that
 * fails; a failure never stops the records after it.
 */
export function readTail(records: readonly StoredRecord[], corrupt: CorruptRecord[]): WalRecord[] {
  const tail: WalRecord[] = []
  for (const record of records) {
    const key = String(record.key)
    const bytes = storedBytes(record.value)
    if (bytes === null) {
      corrupt.push({ store: 'wal', key, reason: notBytes(record.value) })
      continue
    }
    const result = decodeWalRecord(bytes)
    if (!result.ok) {
      const report: { -readonly [K in keyof CorruptRecord]: CorruptRecord[K] } = { store: 'wal', key, reason: result.reason }
      if (result.kind !== undefined) report.kind = result.kind
      if (result.eventCount !== undefined) report.lostEvents = result.eventCount
      corrupt.push(report)
    } else if (result.lsn !== record.key) {
      const { op } = result
      const report: CorruptRecord =
        op.kind === 'ingest'
          ? { store: 'wal', key, reason: `record says lsn ${result.lsn}, stored under ${key}`, kind: op.kind, lostEvents: op.events.length }
          : { store: 'wal', key, reason: `record says lsn ${result.lsn}, stored under ${key}`, kind: op.kind }
      corrupt.push(report)
    } else {
      tail.push({ lsn: result.lsn, op: result.op })
    }
  }
  return tail
}

/** Checks one stored late-lane record: it must verify and start at its key. */
export function readLateLaneRecord(key: number, value: unknown): LateLaneRecord | CorruptRecord {
  const bytes = storedBytes(value)
  const name = String(key)
  if (bytes === null) return { store: 'lateLane', key: name, reason: notBytes(value) }
  const read = decodeHistoryRecord(LATE_LANE_COLUMNS, bytes)
  if (!read.ok) return { store: 'lateLane', key: name, reason: read.reason }
  if (read.first !== key) return { store: 'lateLane', key: name, reason: `record says first ${read.first}, stored under ${name}` }
  return { from: key, entries: read.entries }
}

/**
 * True when `key` can be an lsn (a log record's key, a checkpoint's upToLsn): a whole number from
 * 1 up to 2^53 − 1. Stores written by this library hold no other keys; a foreign or hand-edited
 * record may.
 *
 * @example
 * isLsn(7) // true
 * isLsn(2.5) // false
 * isLsn('7') // false
 */
export function isLsn(key: unknown): key is number {
  return typeof key === 'number' && Number.isSafeInteger(key) && key >= 1
}

/**
 * The report of a record found under a key where this library never leaves one: a key that is
 * not an lsn, or a log record at or behind the checkpoint (whose state does not hold it). Says
 * what was lost with it when it still decodes.
 *
 * @example
 * strayRecord('wal', { key: 1, value }, 2) // { store: 'wal', key: '1', reason: 'stored under lsn 1, at or behind the checkpoint at lsn 2, whose state does not hold it', kind: 'ingest', lostEvents: 1 }
 */
export function strayRecord(store: 'wal' | 'checkpoints', record: { readonly key: IDBValidKey; readonly value: unknown }, checkpointLsn: number): CorruptRecord {
  const { key, value } = record
  const reason = isLsn(key)
    ? `stored under lsn ${key}, at or behind the checkpoint at lsn ${checkpointLsn}, whose state does not hold it`
    : `stored under ${typeof key === 'string' ? JSON.stringify(key) : String(key)}, which is not an lsn (a whole number >= 1)`
  const bytes = store === 'wal' ? storedBytes(value) : null
  const decoded = bytes === null ? null : decodeWalRecord(bytes)
  if (decoded === null) return { store, key: String(key), reason }
  const kind = decoded.ok ? decoded.op.kind : decoded.kind
  const lostEvents = decoded.ok ? (decoded.op.kind === 'ingest' ? decoded.op.events.length : undefined) : decoded.eventCount
  return { store, key: String(key), reason, ...(kind === undefined ? {} : { kind }), ...(lostEvents === undefined ? {} : { lostEvents }) }
}

export function isCorrupt<T>(read: T | CorruptRecord): read is CorruptRecord {
  return typeof read === 'object' && read !== null && 'reason' in read && 'store' in read
}
