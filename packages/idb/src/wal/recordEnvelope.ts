/**
 * The checksummed envelope of checkpoints and history records (log records have their own
 * header, walCodec.ts). Every number is little-endian.
 *
 *   offset  bytes  field
 *   0       4      magic: 0x50434D54 (the bytes "TMCP") for a checkpoint, 0x48434D54 ("TMCH")
 *                  for a history record
 *   4       2      format version (1)
 *   6       2      kind: 0 checkpoint, 1 late lane, 2 archive
 *   8       8      first, float64 holding a safe integer >= 0: a checkpoint's upToLsn, the
 *                  number of a late-lane record's first entry, an archive record's sequence
 *   16      4      entries (0 for a checkpoint)
 *   20      4      payload byte length
 *   24      4      payload CRC-32 over [32, end)
 *   28      4      header CRC-32 over [0, 28)
 *   32      ...    payload
 *
 * The header has its own checksum so a damaged payload still tells what was lost.
 */
import { crc32 } from './crc32.ts'

const FORMAT_VERSION = 1
const HEADER_BYTES = 32

/** One kind of enveloped record. */
export interface EnvelopeKind {
  readonly magic: number
  readonly kind: number
  /** What the record is, for messages: 'checkpoint', 'lateLane', 'archive'. */
  readonly name: string
  /** What `first` is, for messages. */
  readonly first: string
}

/** What `unseal` found: the header's fields and the payload (a view into the bytes), or why not, with `first` once the header is trusted. */
export type Unsealed =
  | { readonly ok: true; readonly first: number; readonly entries: number; readonly payload: Uint8Array }
  | { readonly ok: false; readonly reason: string; readonly first?: number }

/** `payload` in an envelope of `kind` (layout in the file header). */
export function seal(kind: EnvelopeKind, first: number, entries: number, payload: Uint8Array): Uint8Array<ArrayBuffer> {
  if (!Number.isSafeInteger(first) || first < 0) throw new RangeError(`${kind.first} must be a safe integer >= 0, got ${first}`)
  const bytes = new Uint8Array(HEADER_BYTES + payload.length)
  bytes.set(payload, HEADER_BYTES)
  const view = new DataView(bytes.buffer)
  view.setUint32(0, kind.magic, true)
  view.setUint16(4, FORMAT_VERSION, true)
  view.setUint16(6, kind.kind, true)
  view.setFloat64(8, first, true)
  view.setUint32(16, entries, true)
  view.setUint32(20, payload.length, true)
  view.setUint32(24, crc32(bytes, HEADER_BYTES), true)
  view.setUint32(28, crc32(bytes, 0, 28), true)
  return bytes
}

/** Opens an envelope of `kind`, verifying both checksums. Never throws. */
export function unseal(kind: EnvelopeKind, bytes: Uint8Array): Unsealed {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length)
  // Foreign bytes are named as such even when they are short.
  if (bytes.length >= 4 && view.getUint32(0, true) !== kind.magic) return { ok: false, reason: `not a ${kind.name} record (bad magic)` }
  if (bytes.length < HEADER_BYTES) return { ok: false, reason: `${bytes.length} bytes is shorter than the ${kind.name} header` }
  if (crc32(bytes, 0, 28) !== view.getUint32(28, true)) return { ok: false, reason: 'header checksum mismatch' }
  const version = view.getUint16(4, true)
  if (version !== FORMAT_VERSION) return { ok: false, reason: `unsupported ${kind.name} format version ${version}` }
  const found = view.getUint16(6, true)
  if (found !== kind.kind) return { ok: false, reason: `record kind ${found} is not ${kind.name}` }
  const first = view.getFloat64(8, true)
  if (!Number.isSafeInteger(first) || first < 0) return { ok: false, reason: `invalid ${kind.first} ${first}` }
  const expected = HEADER_BYTES + view.getUint32(20, true)
  if (bytes.length !== expected) return { ok: false, reason: `${bytes.length} bytes, header describes ${expected}`, first }
  if (crc32(bytes, HEADER_BYTES) !== view.getUint32(24, true)) return { ok: false, reason: 'payload checksum mismatch', first }
  return { ok: true, first, entries: view.getUint32(16, true), payload: bytes.subarray(HEADER_BYTES) }
}
