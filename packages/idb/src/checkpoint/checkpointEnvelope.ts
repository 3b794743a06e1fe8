/**
 * The checksum envelope around checkpoint bytes (the engine state itself is encoded by
 * checkpointCodec.ts). Every number is little-endian.
 *
 *   offset  bytes  field
 *   0       4      magic 0x50434D54 (the bytes "TMCP")
 *   4       2      format version (1)
 *   6       2      flags (0, reserved)
 *   8       8      upToLsn, float64 holding a safe integer >= 0
 *   16      4      state byte length
 *   20      4      payload CRC-32 over [32, end)
 *   24      4      reserved (0)
 *   28      4      header CRC-32 over [0, 28)
 *   32      ...    state
 */

import { crc32 } from '../wal/crc32.ts'
import type { Checkpoint } from '../store/persistence.ts'

const CHECKPOINT_MAGIC = 0x50434d54
const FORMAT_VERSION = 1
const CHECKPOINT_HEADER_BYTES = 32

/**
 * What `decodeCheckpoint` found: the checkpoint, or why the bytes are not one (with the lsn it
 * covers when the header could be read).
 *
 * @example
 * const decoded: CheckpointDecodeResult = decodeCheckpoint(bytes)
 * if (!decoded.ok) console.warn('checkpoint refused:', decoded.reason)
 */
export type CheckpointDecodeResult =
  | { readonly ok: true; readonly checkpoint: Checkpoint }
  | { readonly ok: false; readonly reason: string; readonly upToLsn?: number }

/**
 * Wraps checkpoint state in a checksummed envelope (layout in the file header).
 *
 * @example
 * const bytes = encodeCheckpoint({ upToLsn: 42, state: engineState })
 * decodeCheckpoint(bytes) // { ok: true, checkpoint: { upToLsn: 42, state } }
 */
export function encodeCheckpoint(checkpoint: Checkpoint): Uint8Array<ArrayBuffer> {
  const { upToLsn, state } = checkpoint
  if (!Number.isSafeInteger(upToLsn) || upToLsn < 0) throw new RangeError(`upToLsn must be a safe integer >= 0, got ${upToLsn}`)
  const bytes = new Uint8Array(CHECKPOINT_HEADER_BYTES + state.length)
  bytes.set(state, CHECKPOINT_HEADER_BYTES)
  const view = new DataView(bytes.buffer)
  view.setUint32(0, CHECKPOINT_MAGIC, true)
  view.setUint16(4, FORMAT_VERSION, true)
  view.setUint16(6, 0, true)
  view.setFloat64(8, upToLsn, true)
  view.setUint32(16, state.length, true)
  view.setUint32(20, crc32(bytes, CHECKPOINT_HEADER_BYTES), true)
  view.setUint32(24, 0, true)
  view.setUint32(28, crc32(bytes, 0, 28), true)
  return bytes
}

/**
 * Opens a checkpoint envelope, verifying both checksums. Never throws. The returned
 * `state` is a view into `bytes`, not a copy.
 *
 * @example
 * const result = decodeCheckpoint(bytes)
 * if (result.ok) restore(result.checkpoint.state)
 */
export function decodeCheckpoint(bytes: Uint8Array): CheckpointDecodeResult {
  if (bytes.length < CHECKPOINT_HEADER_BYTES) return { ok: false, reason: `${bytes.length} bytes is shorter than the checkpoint header` }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length)
  if (view.getUint32(0, true) !== CHECKPOINT_MAGIC) return { ok: false, reason: 'not a checkpoint (bad magic)' }
  if (crc32(bytes, 0, 28) !== view.getUint32(28, true)) return { ok: false, reason: 'header checksum mismatch' }
  const version = view.getUint16(4, true)
  if (version !== FORMAT_VERSION) return { ok: false, reason: `unsupported checkpoint format version ${version}` }
  const upToLsn = view.getFloat64(8, true)
  if (!Number.isSafeInteger(upToLsn) || upToLsn < 0) return { ok: false, reason: `invalid upToLsn ${upToLsn}` }
  const expected = CHECKPOINT_HEADER_BYTES + view.getUint32(16, true)
  if (bytes.length !== expected) return { ok: false, reason: `${bytes.length} bytes, header describes ${expected}`, upToLsn }
  if (crc32(bytes, CHECKPOINT_HEADER_BYTES) !== view.getUint32(20, true)) {
    return { ok: false, reason: 'payload checksum mismatch', upToLsn }
  }
  return { ok: true, checkpoint: { upToLsn, state: bytes.subarray(CHECKPOINT_HEADER_BYTES) } }
}

