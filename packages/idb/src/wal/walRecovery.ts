import { decodeCheckpoint } from '../checkpoint/checkpointEnvelope.ts'
import type { ArchiveKey } from '../history/finalArchive.ts'
import { decodeHistoryRecord } from '../history/historyRecord.ts'
import type { ArchivedChange, Checkpoint, CorruptRecord, LateLaneRecord, WalRecord } from '../store/persistence.ts'
import { decodeWalRecord } from './walCodec.ts'

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
  const bytes = asBytes(record.value)
  if (bytes === null) {
    return { ok: false, corrupt: { store: 'checkpoints', key, reason: `stored value is ${describe(record.value)}, not bytes` } }
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
    const bytes = asBytes(record.value)
    if (bytes === null) {
      corrupt.push({ store: 'wal', key, reason: `stored value is ${describe(record.value)}, not bytes` })
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
  const bytes = asBytes(value)
  const name = String(key)
  if (bytes === null) return { store: 'lateLane', key: name, reason: `stored value is ${describe(value)}, not bytes` }
  const read = decodeHistoryRecord('lateLane', bytes)
  if (!read.ok) return { store: 'lateLane', key: name, reason: read.reason }
  if (read.first !== key) return { store: 'lateLane', key: name, reason: `record says first ${read.first}, stored under ${name}` }
  return { from: key, entries: read.entries }
}

/** Checks one stored archive record: it must verify and hold the changes its key counts. */
export function readArchiveRecord(key: ArchiveKey, value: unknown): readonly ArchivedChange[] | CorruptRecord {
  const bytes = asBytes(value)
  const name = key.join(',')
  if (bytes === null) return { store: 'archive', key: name, reason: `stored value is ${describe(value)}, not bytes` }
  const read = decodeHistoryRecord('archive', bytes)
  if (!read.ok) return { store: 'archive', key: name, reason: read.reason }
  if (read.first !== key[0] || read.entries.length !== key[1]) {
    return { store: 'archive', key: name, reason: `record holds ${read.entries.length} changes as number ${read.first}` }
  }
  return read.entries
}

export function isCorrupt<T>(read: T | CorruptRecord): read is CorruptRecord {
  return typeof read === 'object' && read !== null && 'reason' in read && 'store' in read
}

function asBytes(value: unknown): Uint8Array | null {
  // toString also catches ArrayBuffers from another realm (a worker, a test VM).
  if (value instanceof ArrayBuffer || Object.prototype.toString.call(value) === '[object ArrayBuffer]') {
    return new Uint8Array(value as ArrayBuffer)
  }
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
  return null
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value === 'object') return `an object (${Object.prototype.toString.call(value)})`
  return `a ${typeof value}`
}
