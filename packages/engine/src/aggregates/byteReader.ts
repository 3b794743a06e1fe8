/**
 * Reads an aggregate state's encoding back, checking every length before it reads: a truncated,
 * oversized or malformed state (from a hostile or corrupted peer, log or checkpoint) throws a
 * RangeError naming the state and the problem, never reads past the end and never allocates in
 * proportion to a count it has not checked against a bound.
 *
 * @example
 * const reader = new ByteReader(new Uint8Array([0x48, 0xac, 0x02]), 'histogram state')
 * reader.byte() // 0x48
 * reader.varint('count', 1000) // 300
 * reader.end()
 */
export class ByteReader {
  readonly #bytes: Uint8Array
  readonly #view: DataView
  readonly #what: string
  #at = 0

  /** `what` names the state in errors ("quantiles state"). Throws a RangeError when `bytes` is not a Uint8Array. */
  constructor(bytes: Uint8Array, what: string) {
    if (!(bytes instanceof Uint8Array)) throw new RangeError(`${what}: expected a Uint8Array, got ${bytes === null ? 'null' : typeof bytes}`)
    this.#bytes = bytes
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    this.#what = what
  }

  /** Bytes not read yet. */
  get remaining(): number {
    return this.#bytes.length - this.#at
  }

  /** A RangeError naming the state, for checks the caller makes on what it read. */
  fail(problem: string): RangeError {
    return new RangeError(`${this.#what}: ${problem}`)
  }

  /** Reads the format byte and checks it is `expected` (a kind and a version of the layout). */
  format(expected: number): void {
    const found = this.byte()
    if (found !== expected) throw this.fail(`format byte 0x${hex(found)} is not 0x${hex(expected)} (wrong kind or version)`)
  }

  /** Reads one byte. */
  byte(): number {
    this.#need(1)
    return this.#bytes[this.#at++] as number
  }

  /** Reads an unsigned LEB128 varint and checks it is at most `max` (a safe integer). */
  varint(field: string, max: number): number {
    let value = 0
    let scale = 1
    for (let i = 0; i < 8; i++) {
      const b = this.byte()
      value += (b & 0x7f) * scale
      if (b < 0x80) {
        if (b === 0 && i > 0) throw this.fail(`${field} is an overlong varint`)
        if (value > max) throw this.fail(`${field} ${value} exceeds ${max}`)
        return value
      }
      scale *= 0x80
    }
    throw this.fail(`${field} is a varint longer than 8 bytes`)
  }

  /** Reads a zigzag varint and checks its magnitude is at most `max`. */
  signed(field: string, max: number): number {
    const z = this.varint(field, Number.MAX_SAFE_INTEGER)
    const value = z % 2 === 1 ? -(z + 1) / 2 : z / 2
    if (Math.abs(value) > max) throw this.fail(`${field} ${value} is beyond ±${max}`)
    return value
  }

  /** Reads a big-endian unsigned 32-bit integer. */
  uint32(): number {
    this.#need(4)
    const value = this.#view.getUint32(this.#at)
    this.#at += 4
    return value
  }

  /** Reads a little-endian float64 and checks it is finite. */
  float64(field: string): number {
    this.#need(8)
    const value = this.#view.getFloat64(this.#at, true)
    this.#at += 8
    if (!Number.isFinite(value)) throw this.fail(`${field} is ${value}, not a finite number`)
    return value
  }

  /** Checks that every byte was read. */
  end(): void {
    if (this.remaining !== 0) throw this.fail(`${this.remaining} unexpected trailing byte(s)`)
  }

  #need(n: number): void {
    if (this.#at + n > this.#bytes.length) throw this.fail(`truncated at byte ${this.#at} of ${this.#bytes.length} (needs ${n} more)`)
  }
}

function hex(n: number): string {
  return n.toString(16).padStart(2, '0')
}
