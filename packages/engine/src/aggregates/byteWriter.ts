/**
 * Builds an aggregate state's encoding: bytes, unsigned LEB128 varints up to 2^53 - 1 and
 * little-endian float64s, in a buffer that grows by doubling. Every aggregate encodes through
 * it so the layouts documented beside `encode` share one set of primitives.
 *
 * @example
 * const writer = new ByteWriter()
 * writer.byte(0x48)
 * writer.varint(300)
 * writer.finish() // Uint8Array [0x48, 0xac, 0x02]
 */
export class ByteWriter {
  #bytes = new Uint8Array(32)
  #view = new DataView(this.#bytes.buffer)
  #length = 0

  /** Appends one byte (0–255). */
  byte(value: number): void {
    this.#room(1)
    this.#bytes[this.#length++] = value
  }

  /** Appends a non-negative safe integer as an unsigned LEB128 varint (1 byte below 128, at most 8). */
  varint(value: number): void {
    this.#room(8)
    // Arithmetic, not shifts: shifts would cut values above 2^31.
    while (value >= 0x80) {
      this.#bytes[this.#length++] = (value % 0x80) | 0x80
      value = Math.floor(value / 0x80)
    }
    this.#bytes[this.#length++] = value
  }

  /** Appends a safe integer of either sign as a zigzag varint (0, -1, 1, -2, ... → 0, 1, 2, 3, ...). */
  signed(value: number): void {
    this.varint(value < 0 ? -2 * value - 1 : 2 * value)
  }

  /** Appends an unsigned 32-bit integer, big-endian, so byte order sorts as the number does. */
  uint32(value: number): void {
    this.#room(4)
    this.#view.setUint32(this.#length, value)
    this.#length += 4
  }

  /** Appends a float64, little-endian. */
  float64(value: number): void {
    this.#room(8)
    this.#view.setFloat64(this.#length, value, true)
    this.#length += 8
  }

  /** A copy of the bytes written so far, exactly as long as they are. */
  finish(): Uint8Array {
    return this.#bytes.slice(0, this.#length)
  }

  #room(extra: number): void {
    if (this.#length + extra <= this.#bytes.length) return
    const grown = new Uint8Array(Math.max(this.#bytes.length * 2, this.#length + extra))
    grown.set(this.#bytes)
    this.#bytes = grown
    this.#view = new DataView(grown.buffer)
  }
}
