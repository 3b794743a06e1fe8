/**
 * The checkpoint as stored: the engine state (encoded by checkpointCodec.ts) in the checksummed
 * envelope of recordEnvelope.ts, magic "TMCP", kind 0, `first` = upToLsn, no entries.
 */

import { type EnvelopeKind, seal, unseal } from '../wal/recordEnvelope.ts'
import type { Checkpoint } from '../persistence/persistence.ts'

const CHECKPOINT: EnvelopeKind = { magic: 0x50434d54, kind: 0, name: 'checkpoint', first: 'upToLsn' }

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
 * Wraps checkpoint state in a checksummed envelope (layout in recordEnvelope.ts).
 *
 * @example
 * const bytes = encodeCheckpoint({ upToLsn: 42, state: engineState })
 * decodeCheckpoint(bytes) // { ok: true, checkpoint: { upToLsn: 42, state } }
 */
export function encodeCheckpoint(checkpoint: Checkpoint): Uint8Array<ArrayBuffer> {
  return seal(CHECKPOINT, checkpoint.upToLsn, 0, checkpoint.state)
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
  const read = unseal(CHECKPOINT, bytes)
  if (read.ok) return { ok: true, checkpoint: { upToLsn: read.first, state: read.payload } }
  return read.first === undefined ? { ok: false, reason: read.reason } : { ok: false, reason: read.reason, upToLsn: read.first }
}
