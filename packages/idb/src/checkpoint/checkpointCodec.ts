/**
 * Engine checkpoints (`EngineCheckpoint`, plain data and bytes) as bytes, exactly: every
 * number keeps its bits (±Infinity, NaN, -0), every string its code units (lone surrogates
 * too), `undefined` stays distinct from an absent property, and key order is kept.
 * The checksum lives in the envelope around these bytes (checkpointEnvelope.ts).
 *
 *   0      4  magic 0x43454D54 (the bytes "TMEC")
 *   4      1  codec version (1)
 *   5      …  one value
 *
 * A value is a tag byte and its body; varints are unsigned LEB128 up to 2^53:
 *
 *   0 undefined · 1 null · 2 false · 3 true
 *   4 varint          a non-negative safe integer (not -0)
 *   5 varint          a negative safe integer, stored as its absolute value
 *   6 8 bytes         any other number, float64 little-endian
 *   7 string          inline string
 *   8 string          inline string that also enters the dictionary (next index)
 *   9 varint          dictionary string by index
 *   10 varint, items  array
 *   11 varint, pairs  object: each key (a tag 7–9 value) followed by its value
 *   12 varint, bytes  a Uint8Array (aggregate states), its length then its bytes (a reader
 *                     from before aggregates refuses it: unknown tag 12)
 *
 * A string body is varint (length << 1 | utf16); UTF-8 bytes follow when utf16 is 0
 * (length counts bytes), raw UTF-16 code units when it is 1 (length counts units:
 * strings with lone surrogates). Object keys and short strings enter the dictionary,
 * so repeated names (sources, window ids, field names) cost a few bytes; unique ids
 * beyond the dictionary's bound stay inline.
 */

import type { EngineCheckpoint } from '@tidemark/engine'
import { utf8Length } from '../wal/walStrings.ts'

const MAGIC = 0x43454d54
const CODEC_VERSION = 1
const MAX_DICTIONARY = 1 << 16
const MAX_DICTIONARY_STRING = 64

const TAG_UNDEFINED = 0
const TAG_NULL = 1
const TAG_FALSE = 2
const TAG_TRUE = 3
const TAG_UINT = 4
const TAG_NEG_INT = 5
const TAG_FLOAT = 6
const TAG_STRING = 7
const TAG_STRING_DEFINE = 8
const TAG_STRING_REF = 9
const TAG_ARRAY = 10
const TAG_OBJECT = 11
const TAG_BYTES = 12

const textEncoder = new TextEncoder()
const textDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * Encodes a checkpoint taken with `engine.checkpoint()`. Throws a TypeError naming the
 * path of a value that is not plain data (a Map, a function, a class instance).
 *
 * @example
 * const engine = new TidemarkEngine({ windows: tumbling(60_000) })
 * const state = encodeEngineCheckpoint(engine.checkpoint())
 * await persistence.checkpoint({ upToLsn: persistence.lastLsn, state })
 */
export function encodeEngineCheckpoint(checkpoint: EngineCheckpoint): Uint8Array<ArrayBuffer> {
  const writer = new Writer()
  writer.u32(MAGIC)
  writer.byte(CODEC_VERSION)
  writer.value(checkpoint, 'checkpoint')
  return writer.finish()
}

/**
 * Decodes what `encodeEngineCheckpoint` wrote. Throws a RangeError naming the offset when
 * the bytes are not such a checkpoint; the envelope's checksum has already ruled out
 * damage, so a failure here means another writer or a newer format.
 *
 * @example
 * const { checkpoint } = await persistence.open()
 * const engine = new TidemarkEngine({ windows: tumbling(60_000) })
 * if (checkpoint !== null) engine.restore(decodeEngineCheckpoint(checkpoint.state))
 */
export function decodeEngineCheckpoint(bytes: Uint8Array): EngineCheckpoint {
  const reader = new Reader(bytes)
  if (bytes.length < 5 || reader.u32() !== MAGIC) throw new RangeError('not an engine checkpoint (bad magic)')
  const version = reader.byte()
  if (version !== CODEC_VERSION) throw new RangeError(`unsupported engine checkpoint codec version ${version}`)
  const value = reader.value(0)
  if (reader.at !== bytes.length) throw new RangeError(`engine checkpoint has ${bytes.length - reader.at} trailing bytes`)
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new RangeError('engine checkpoint is not an object')
  return value as EngineCheckpoint
}

class Writer {
  #bytes = new Uint8Array(1 << 16)
  #view = new DataView(this.#bytes.buffer)
  #at = 0
  readonly #dictionary = new Map<string, number>()

  finish(): Uint8Array<ArrayBuffer> {
    return this.#bytes.slice(0, this.#at)
  }

  byte(value: number): void {
    this.#reserve(1)
    this.#bytes[this.#at++] = value
  }

  u32(value: number): void {
    this.#reserve(4)
    this.#view.setUint32(this.#at, value, true)
    this.#at += 4
  }

  varint(value: number): void {
    this.#reserve(8)
    const bytes = this.#bytes
    let at = this.#at
    while (value >= 0x80) {
      bytes[at++] = (value % 0x80) | 0x80
      value = Math.floor(value / 0x80)
    }
    bytes[at++] = value
    this.#at = at
  }

  value(value: unknown, path: string): void {
    switch (typeof value) {
      case 'undefined':
        this.byte(TAG_UNDEFINED)
        return
      case 'boolean':
        this.byte(value ? TAG_TRUE : TAG_FALSE)
        return
      case 'number':
        this.#number(value)
        return
      case 'string':
        this.#string(value, value.length <= MAX_DICTIONARY_STRING)
        return
      case 'object':
        if (value === null) this.byte(TAG_NULL)
        else if (value instanceof Uint8Array) {
          this.byte(TAG_BYTES)
          this.varint(value.length)
          this.#reserve(value.length)
          this.#bytes.set(value, this.#at)
          this.#at += value.length
        } else if (Array.isArray(value)) {
          this.byte(TAG_ARRAY)
          this.varint(value.length)
          for (let i = 0; i < value.length; i++) this.value(value[i], path)
        } else {
          const prototype = Object.getPrototypeOf(value)
          if (prototype !== Object.prototype && prototype !== null) throw new TypeError(`${path} holds a ${describe(value)}, not plain data`)
          const keys = Object.keys(value)
          this.byte(TAG_OBJECT)
          this.varint(keys.length)
          for (const key of keys) {
            this.#string(key, true)
            this.value((value as Record<string, unknown>)[key], path)
          }
        }
        return
      default:
        throw new TypeError(`${path} holds a ${typeof value}, not plain data`)
    }
  }

  #number(value: number): void {
    if (Number.isSafeInteger(value) && !Object.is(value, -0)) {
      this.byte(value >= 0 ? TAG_UINT : TAG_NEG_INT)
      this.varint(Math.abs(value))
      return
    }
    this.byte(TAG_FLOAT)
    this.#reserve(8)
    this.#view.setFloat64(this.#at, value, true)
    this.#at += 8
  }

  #string(text: string, shared: boolean): void {
    if (shared) {
      const index = this.#dictionary.get(text)
      if (index !== undefined) {
        this.byte(TAG_STRING_REF)
        this.varint(index)
        return
      }
      shared = this.#dictionary.size < MAX_DICTIONARY
      if (shared) this.#dictionary.set(text, this.#dictionary.size)
    }
    this.byte(shared ? TAG_STRING_DEFINE : TAG_STRING)
    const utf8 = utf8Length(text)
    if (utf8 < 0) {
      this.varint(text.length * 2 + 1)
      this.#reserve(2 * text.length)
      for (let k = 0; k < text.length; k++) {
        const unit = text.charCodeAt(k)
        this.#bytes[this.#at++] = unit & 0xff
        this.#bytes[this.#at++] = unit >>> 8
      }
      return
    }
    this.varint(utf8 * 2)
    this.#reserve(utf8)
    if (utf8 === text.length) {
      // ASCII: one byte per code unit, cheaper than a TextEncoder call for short names.
      const bytes = this.#bytes
      let at = this.#at
      for (let k = 0; k < text.length; k++) bytes[at++] = text.charCodeAt(k)
      this.#at = at
    } else {
      this.#at += textEncoder.encodeInto(text, this.#bytes.subarray(this.#at, this.#at + utf8)).written
    }
  }

  #reserve(extra: number): void {
    if (this.#at + extra <= this.#bytes.length) return
    let size = this.#bytes.length * 2
    while (size < this.#at + extra) size *= 2
    const grown = new Uint8Array(size)
    grown.set(this.#bytes.subarray(0, this.#at))
    this.#bytes = grown
    this.#view = new DataView(grown.buffer)
  }
}

class Reader {
  readonly #bytes: Uint8Array
  readonly #view: DataView
  at = 0
  readonly #dictionary: string[] = []

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }

  byte(): number {
    const value = this.#bytes[this.at]
    if (value === undefined) throw new RangeError(`engine checkpoint ends early at byte ${this.at}`)
    this.at++
    return value
  }

  u32(): number {
    this.#need(4)
    const value = this.#view.getUint32(this.at, true)
    this.at += 4
    return value
  }

  varint(): number {
    let value = 0
    let scale = 1
    for (;;) {
      const byte = this.byte()
      value += (byte & 0x7f) * scale
      if (byte < 0x80) break
      scale *= 0x80
      if (scale > 2 ** 56) throw new RangeError(`varint too long at byte ${this.at}`)
    }
    return value
  }

  value(depth: number): unknown {
    if (depth > 64) throw new RangeError(`engine checkpoint nests deeper than 64 at byte ${this.at}`)
    const at = this.at
    const tag = this.byte()
    switch (tag) {
      case TAG_UNDEFINED:
        return undefined
      case TAG_NULL:
        return null
      case TAG_FALSE:
        return false
      case TAG_TRUE:
        return true
      case TAG_UINT:
        return this.varint()
      case TAG_NEG_INT:
        return -this.varint()
      case TAG_FLOAT: {
        this.#need(8)
        const value = this.#view.getFloat64(this.at, true)
        this.at += 8
        return value
      }
      case TAG_STRING:
      case TAG_STRING_DEFINE:
      case TAG_STRING_REF:
        return this.#string(tag)
      case TAG_ARRAY: {
        const length = this.varint()
        // Every item takes at least one byte: a length beyond the input is damage, not a huge array.
        this.#need(length)
        const items = new Array<unknown>(length)
        for (let i = 0; i < length; i++) items[i] = this.value(depth + 1)
        return items
      }
      case TAG_BYTES: {
        const length = this.varint()
        this.#need(length)
        this.at += length
        return this.#bytes.slice(this.at - length, this.at)
      }
      case TAG_OBJECT: {
        const count = this.varint()
        this.#need(2 * count)
        const object: Record<string, unknown> = {}
        for (let i = 0; i < count; i++) {
          const key = this.#string(this.byte())
          const value = this.value(depth + 1)
          // Assignment to '__proto__' would set the prototype instead of a property.
          if (key === '__proto__') Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true })
          else object[key] = value
        }
        return object
      }
      default:
        throw new RangeError(`unknown tag ${tag} at byte ${at}`)
    }
  }

  #string(tag: number): string {
    if (tag === TAG_STRING_REF) {
      const index = this.varint()
      const text = this.#dictionary[index]
      if (text === undefined) throw new RangeError(`dictionary string ${index} not defined before byte ${this.at}`)
      return text
    }
    if (tag !== TAG_STRING && tag !== TAG_STRING_DEFINE) throw new RangeError(`expected a string at byte ${this.at - 1}, found tag ${tag}`)
    const header = this.varint()
    const length = Math.floor(header / 2)
    let text: string
    if (header % 2 === 1) {
      this.#need(2 * length)
      text = ''
      for (let k = 0; k < length; k++) text += String.fromCharCode(this.#view.getUint16(this.at + 2 * k, true))
      this.at += 2 * length
    } else {
      this.#need(length)
      text = this.#utf8(length)
    }
    if (tag === TAG_STRING_DEFINE) this.#dictionary.push(text)
    return text
  }

  #utf8(length: number): string {
    const bytes = this.#bytes
    const start = this.at
    const end = start + length
    this.at = end
    if (length <= 32) {
      let text = ''
      let i = start
      for (; i < end; i++) {
        const byte = bytes[i] as number
        if (byte >= 0x80) break
        text += String.fromCharCode(byte)
      }
      if (i === end) return text
    }
    try {
      return textDecoder.decode(bytes.subarray(start, end))
    } catch {
      throw new RangeError(`invalid UTF-8 in the string at byte ${start}`)
    }
  }

  #need(count: number): void {
    if (this.at + count > this.#bytes.length) throw new RangeError(`engine checkpoint ends early at byte ${this.at}`)
  }
}

function describe(value: object): string {
  return Object.prototype.toString.call(value).slice(8, -1)
}
