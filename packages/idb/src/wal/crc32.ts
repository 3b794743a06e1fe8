/**
 * CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), the checksum of zlib and PNG.
 * Slicing-by-8: eight 256-entry tables let the loop consume eight bytes per step, which
 * matters because recovery checksums every stored byte before trusting it.
 */

const tables = buildTables()

function buildTables(): Uint32Array {
  const t = new Uint32Array(8 * 256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    t[n] = c >>> 0
  }
  for (let n = 0; n < 256; n++) {
    let c = t[n] as number
    for (let k = 1; k < 8; k++) {
      c = (t[c & 0xff] as number) ^ (c >>> 8)
      t[k * 256 + n] = c >>> 0
    }
  }
  return t
}

/**
 * Extends a running CRC-32 over `bytes[start, end)`; start a fresh checksum with `crc = 0`.
 *
 * @example
 * crc32(new TextEncoder().encode('123456789')) // 0xcbf43926
 * crc32(tail, 0, tail.length, crc32(head)) // same as crc32 over head followed by tail
 */
export function crc32(bytes: Uint8Array, start = 0, end = bytes.length, crc = 0): number {
  const t = tables
  let c = ~crc
  let i = start
  for (; i + 8 <= end; i += 8) {
    const lo = c ^ ((bytes[i] as number) | ((bytes[i + 1] as number) << 8) | ((bytes[i + 2] as number) << 16) | ((bytes[i + 3] as number) << 24))
    c =
      (t[1792 + (lo & 0xff)] as number) ^
      (t[1536 + ((lo >>> 8) & 0xff)] as number) ^
      (t[1280 + ((lo >>> 16) & 0xff)] as number) ^
      (t[1024 + (lo >>> 24)] as number) ^
      (t[768 + (bytes[i + 4] as number)] as number) ^
      (t[512 + (bytes[i + 5] as number)] as number) ^
      (t[256 + (bytes[i + 6] as number)] as number) ^
      (t[bytes[i + 7] as number] as number)
  }
  for (; i < end; i++) c = (t[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8)
  return ~c >>> 0
}
