/**
 * The string table of a log record: every distinct string once, referred to by index.
 *
 *   4s     lengths in UTF-16 code units; bit 31 set = stored in the UTF-16 section
 *   u8     UTF-8 of the other strings, concatenated in index order
 *   2*u16  UTF-16 code units of the flagged strings, in index order
 *
 * Strings with lone surrogates cannot round-trip through UTF-8, and ids must survive
 * recovery exactly (they are the dedup key), so those few go to the UTF-16 section.
 */

export const UTF16_FLAG = 0x80000000

const textEncoder = new TextEncoder()
// ignoreBOM keeps a leading U+FEFF of the first string; fatal turns bad bytes into a failure.
const textDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** The record's distinct strings in first-use order, with the section sizes they need. */
export class StringTable {
  readonly lengths: number[] = []
  readonly wellFormed: string[] = []
  readonly illFormed: string[] = []
  utf8Bytes = 0
  utf16Units = 0
  readonly #index = new Map<string, number>()

  /** Index of `text`, stored once however often the record repeats it (sources, keys). */
  intern(text: string): number {
    const known = this.#index.get(text)
    if (known !== undefined) return known
    const index = this.add(text)
    this.#index.set(text, index)
    return index
  }

  /** Stores `text` without looking for an earlier copy: ids are unique, so hashing them buys nothing. */
  add(text: string): number {
    const index = this.lengths.length
    const utf8 = utf8Length(text)
    if (utf8 < 0) {
      this.lengths.push((text.length | UTF16_FLAG) >>> 0)
      this.illFormed.push(text)
      this.utf16Units += text.length
    } else {
      this.lengths.push(text.length)
      this.wellFormed.push(text)
      this.utf8Bytes += utf8
    }
    return index
  }

  /** Writes both text sections, UTF-8 at `utf8At` and UTF-16 right after it. */
  writeText(bytes: Uint8Array, utf8At: number): void {
    const utf16At = utf8At + this.utf8Bytes
    if (this.utf8Bytes > 0) {
      const { written } = textEncoder.encodeInto(this.wellFormed.join(''), bytes.subarray(utf8At, utf16At))
      if (written !== this.utf8Bytes) throw new Error(`UTF-8 length mismatch: wrote ${written} of ${this.utf8Bytes} bytes`)
    }
    let at = utf16At
    for (const text of this.illFormed) {
      for (let k = 0; k < text.length; k++) {
        const unit = text.charCodeAt(k)
        bytes[at++] = unit & 0xff
        bytes[at++] = unit >>> 8
      }
    }
  }
}

/** Bytes TextEncoder will produce for `text`, or -1 when it holds a lone surrogate. */
export function utf8Length(text: string): number {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0x80) bytes += 1
    else if (unit < 0x800) bytes += 2
    else if (unit < 0xd800 || unit > 0xdfff) bytes += 3
    else {
      const next = text.charCodeAt(i + 1)
      if (unit > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return -1
      bytes += 4
      i++
    }
  }
  return bytes
}

/** The string table, or the reason it is inconsistent. */
export function decodeStrings(
  record: Uint8Array,
  lengths: Uint32Array,
  utf8At: number,
  utf8Bytes: number,
  utf16Units: number,
): string[] | string {
  let text: string
  try {
    text = textDecoder.decode(record.subarray(utf8At, utf8At + utf8Bytes))
  } catch {
    return 'string section is not valid UTF-8'
  }
  const strings = new Array<string>(lengths.length)
  let textAt = 0
  let unitAt = 0
  const utf16At = utf8At + utf8Bytes
  for (let k = 0; k < lengths.length; k++) {
    const length = lengths[k] as number
    if (length & UTF16_FLAG) {
      const units = length & ~UTF16_FLAG
      if (unitAt + units > utf16Units) return 'string table overruns the UTF-16 section'
      strings[k] = readUtf16(record, utf16At + 2 * unitAt, units)
      unitAt += units
    } else {
      if (textAt + length > text.length) return 'string table overruns the UTF-8 section'
      strings[k] = text.slice(textAt, textAt + length)
      textAt += length
    }
  }
  if (textAt !== text.length || unitAt !== utf16Units) return 'string table does not cover its sections'
  return strings
}

function readUtf16(bytes: Uint8Array, at: number, units: number): string {
  let text = ''
  const chunk: number[] = []
  for (let k = 0; k < units; k++) {
    chunk.push((bytes[at + 2 * k] as number) | ((bytes[at + 2 * k + 1] as number) << 8))
    if (chunk.length === 4096 || k === units - 1) {
      text += String.fromCharCode(...chunk)
      chunk.length = 0
    }
  }
  return text
}
