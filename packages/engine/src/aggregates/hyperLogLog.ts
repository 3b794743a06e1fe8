import type { ByteReader } from './byteReader.ts'
import type { ByteWriter } from './byteWriter.ts'
import { estimateCardinality } from './cardinalityEstimate.ts'

/**
 * The state of `distinct`: the exact set of 64-bit identity hashes while it has at most
 * `explicitLimit(precision)` of them, HyperLogLog registers after. `hashes` is sorted, two
 * numbers per hash (high word, low word); `registers` is null until the switch, after which
 * `hashes` is empty.
 *
 * The state is a function of the set of hashes added, whatever the order, batching or merge
 * tree: the explicit set while the union is small, else the registers of the union (register-wise
 * max is a union homomorphism). So merge is a lattice join: commutative, associative, idempotent.
 *
 * @example
 * const sketch: DistinctSketch = { hashes: [], registers: null }
 */
export interface DistinctSketch {
  hashes: number[]
  registers: Uint8Array | null
}

/**
 * Most hashes kept exactly: 2^(precision − 4) (1024 at precision 14), 8 bytes each, so the
 * explicit set never takes more room than the packed registers (6 bits × 2^precision).
 *
 * @example
 * explicitLimit(14) // 1024
 */
export function explicitLimit(precision: number): number {
  return 2 ** (precision - 4)
}

/**
 * Adds one hash in place, switching to registers past the explicit limit.
 *
 * @example
 * addHash(sketch, 0x9e3779b9, 0x7f4a7c15, 14)
 */
export function addHash(s: DistinctSketch, hi: number, lo: number, precision: number): void {
  if (s.registers !== null) {
    setRegister(s.registers, hi, lo, precision)
    return
  }
  const h = s.hashes
  let a = 0
  let b = h.length / 2
  while (a < b) {
    const mid = (a + b) >>> 1
    const mh = h[2 * mid] as number
    if (mh < hi || (mh === hi && (h[2 * mid + 1] as number) < lo)) a = mid + 1
    else b = mid
  }
  if (h[2 * a] === hi && h[2 * a + 1] === lo) return
  h.splice(2 * a, 0, hi, lo)
  if (h.length / 2 > explicitLimit(precision)) {
    s.registers = registersOf(h, precision)
    s.hashes = []
  }
}

/**
 * The join of two sketches (a new one).
 *
 * @example
 * mergeSketches(a, b, 14)
 */
export function mergeSketches(a: DistinctSketch, b: DistinctSketch, precision: number): DistinctSketch {
  if (a.registers === null && b.registers === null) {
    // The longer list copied, the other joined into the copy in place.
    const swap = a.hashes.length < b.hashes.length
    const hashes = (swap ? b : a).hashes.slice()
    unionInto(hashes, (swap ? a : b).hashes)
    if (hashes.length / 2 <= explicitLimit(precision)) return { hashes, registers: null }
    return { hashes: [], registers: registersOf(hashes, precision) }
  }
  const registers = a.registers === null ? registersOf(a.hashes, precision) : a.registers.slice()
  const other = b.registers ?? registersOf(b.hashes, precision)
  for (let i = 0; i < registers.length; i++) if ((other[i] as number) > (registers[i] as number)) registers[i] = other[i] as number
  return { hashes: [], registers }
}

/**
 * `mergeSketches(into, from, precision)` written into `into` (the same state), sparing a copy of its registers.
 *
 * @example
 * mergeSketchInto(into, from, 14)
 */
export function mergeSketchInto(into: DistinctSketch, from: DistinctSketch, precision: number): DistinctSketch {
  if (into.registers === null && from.registers === null) {
    // A fold meets many small explicit sketches: their hashes join `into`'s list in place.
    const h = into.hashes
    if (h.length === 0) into.hashes = from.hashes.slice()
    else unionInto(h, from.hashes)
    if (into.hashes.length / 2 > explicitLimit(precision)) {
      into.registers = registersOf(into.hashes, precision)
      into.hashes = []
    }
    return into
  }
  into.registers ??= registersOf(into.hashes, precision)
  into.hashes = []
  const registers = into.registers
  const other = from.registers ?? registersOf(from.hashes, precision)
  for (let i = 0; i < registers.length; i++) if ((other[i] as number) > (registers[i] as number)) registers[i] = other[i] as number
  return into
}

/**
 * The distinct count: exact in the explicit set, Ertl's estimate (rounded) from registers.
 *
 * @example
 * distinctCount({ hashes: [1, 2, 3, 4], registers: null }, 14) // 2
 */
export function distinctCount(s: DistinctSketch, precision: number): number {
  return s.registers === null ? s.hashes.length / 2 : Math.round(estimateCardinality(s.registers, precision))
}

/**
 * Writes a sketch. After the format byte, one mode byte:
 * - `0` explicit: `varint n` (≤ the explicit limit), then n hashes as two big-endian uint32
 *   (high, low), strictly increasing.
 * - `1` sparse registers, when at most a quarter of the registers are non-zero: `varint n`, then
 *   per non-zero register the varint gap from the previous index (the first: its index) and its
 *   value (one byte, 1 to 65 − precision).
 * - `2` dense registers: all 2^precision registers packed 6 bits each, big-endian within each
 *   group of 4 registers in 3 bytes.
 *
 * @example
 * encodeSketch(writer, { hashes: [], registers: null }, 14) // 00 00
 */
export function encodeSketch(writer: ByteWriter, s: DistinctSketch): void {
  const r = s.registers
  if (r === null) {
    writer.byte(0)
    writer.varint(s.hashes.length / 2)
    for (const word of s.hashes) writer.uint32(word)
    return
  }
  let n = 0
  for (const v of r) if (v !== 0) n++
  if (n <= r.length / 4) {
    writer.byte(1)
    writer.varint(n)
    let previous = 0
    for (let i = 0; i < r.length; i++) {
      if (r[i] === 0) continue
      writer.varint(i - previous)
      writer.byte(r[i] as number)
      previous = i
    }
    return
  }
  writer.byte(2)
  for (let i = 0; i < r.length; i += 4) {
    const a = r[i] as number
    const b = r[i + 1] as number
    const c = r[i + 2] as number
    writer.byte((a << 2) | (b >> 4))
    writer.byte(((b & 15) << 4) | (c >> 2))
    writer.byte(((c & 3) << 6) | (r[i + 3] as number))
  }
}

/**
 * Reads a sketch written by `encodeSketch`, checking lengths, order, register values and that
 * the mode is the one `encodeSketch` would choose (so re-encoding gives the same bytes).
 *
 * @example
 * decodeSketch(new ByteReader(bytes, 'distinct state'), 14)
 */
export function decodeSketch(reader: ByteReader, precision: number): DistinctSketch {
  const m = 2 ** precision
  const top = 65 - precision
  const mode = reader.byte()
  if (mode === 0) {
    const n = reader.varint('explicit hash count', explicitLimit(precision))
    const hashes: number[] = []
    for (let i = 0; i < n; i++) {
      const hi = reader.uint32()
      const lo = reader.uint32()
      const ph = hashes[2 * i - 2]
      if (ph !== undefined && (ph > hi || (ph === hi && (hashes[2 * i - 1] as number) >= lo))) throw reader.fail('explicit hashes must increase')
      hashes.push(hi, lo)
    }
    return { hashes, registers: null }
  }
  const registers = new Uint8Array(m)
  if (mode === 1) {
    const n = reader.varint('non-zero register count', m / 4)
    let index = -1
    for (let i = 0; i < n; i++) {
      const gap = reader.varint('register gap', m)
      index = i === 0 ? gap : index + gap
      if ((i > 0 && gap === 0) || index >= m) throw reader.fail(`register index ${index} repeats or exceeds ${m - 1}`)
      const value = reader.byte()
      if (value === 0 || value > top) throw reader.fail(`register value ${value} is not from 1 to ${top}`)
      registers[index] = value
    }
  } else if (mode === 2) {
    if (reader.remaining < (m / 4) * 3) throw reader.fail(`dense registers need ${(m / 4) * 3} bytes, ${reader.remaining} left`)
    let n = 0
    for (let i = 0; i < m; i += 4) {
      const x = reader.byte()
      const y = reader.byte()
      const z = reader.byte()
      registers[i] = x >> 2
      registers[i + 1] = ((x & 3) << 4) | (y >> 4)
      registers[i + 2] = ((y & 15) << 2) | (z >> 6)
      registers[i + 3] = z & 63
    }
    for (const v of registers) {
      if (v > top) throw reader.fail(`register value ${v} exceeds ${top}`)
      if (v !== 0) n++
    }
    if (n <= m / 4) throw reader.fail(`dense registers with ${n} non-zero (at most a quarter are written sparse)`)
  } else {
    throw reader.fail(`unknown mode ${mode}`)
  }
  return { hashes: [], registers }
}

function setRegister(registers: Uint8Array, hi: number, lo: number, precision: number): void {
  const rest = (hi << precision) >>> 0
  // 1 + leading zeros of the 64 − precision bits after the index.
  const rank = rest !== 0 ? Math.clz32(rest) + 1 : 33 - precision + (lo === 0 ? 32 : Math.clz32(lo))
  const index = hi >>> (32 - precision)
  if (rank > (registers[index] as number)) registers[index] = rank
}

function registersOf(hashes: readonly number[], precision: number): Uint8Array {
  const registers = new Uint8Array(2 ** precision)
  for (let i = 0; i < hashes.length; i += 2) setRegister(registers, hashes[i] as number, hashes[i + 1] as number, precision)
  return registers
}

/** `unionOfSorted(a, b)` written into `a`: counts the hash pairs of `b` that `a` lacks, then merges from the back. */
function unionInto(a: number[], b: readonly number[]): void {
  let missing = 0
  let i = 0
  let j = 0
  while (j < b.length) {
    const order = i >= a.length ? 1 : (a[i] as number) - (b[j] as number) || (a[i + 1] as number) - (b[j + 1] as number)
    if (order < 0) i += 2
    else {
      if (order > 0) missing += 2
      else i += 2
      j += 2
    }
  }
  if (missing === 0) return
  i = a.length - 2
  j = b.length - 2
  for (let k = 0; k < missing; k++) a.push(0)
  let at = a.length - 2
  while (j >= 0) {
    const order = i < 0 ? -1 : (a[i] as number) - (b[j] as number) || (a[i + 1] as number) - (b[j + 1] as number)
    if (order > 0) {
      a[at] = a[i] as number
      a[at + 1] = a[i + 1] as number
      i -= 2
    } else {
      a[at] = b[j] as number
      a[at + 1] = b[j + 1] as number
      if (order === 0) i -= 2
      j -= 2
    }
    at -= 2
  }
}
