/**
 * Zeroed `Float64Array` blocks carved out of shared buffers.
 *
 * Thousands of small typed arrays each with its own buffer cost more to allocate than to fill,
 * and thousands of small JS arrays are work for V8's young-generation collector (a cold join
 * builds 10k windows at once). A block is a view into a shared buffer; a buffer is freed when no
 * block of it is held. Blocks of one slab should live about as long as each other: one slab for
 * windows' peer rows (retired together by retention), another for transient group columns.
 *
 * @example
 * const slab = new DoubleSlab(8_192) // buffers of 8,192 doubles (64 KB)
 * const columns = slab.take(6 * keys.length) // zeroed, a view into a shared buffer
 */
export class DoubleSlab {
  readonly #size: number
  #buffer = new Float64Array(0)
  #used = 0

  /** `size`: doubles per shared buffer. */
  constructor(size: number) {
    this.#size = size
  }

  /** Where the block `block` last handed out starts in its buffer. */
  at = 0

  /**
   * `n` zeroed doubles. Blocks above a quarter of a buffer get their own: they would waste most
   * of a shared one.
   *
   * @example
   * const rows = new DoubleSlab(8_192)
   * rows.take(48) // Float64Array(48), all zeros, a view into a shared 64 KB buffer
   */
  take(n: number): Float64Array {
    const buffer = this.block(n)
    return buffer.subarray(this.at, this.at + n)
  }

  /**
   * `n` zeroed doubles without a view of their own: the buffer holding them, from `at`. A view
   * is an object of ~100 bytes; a holder that keeps the offset saves it.
   *
   * @example
   * const rows = new DoubleSlab(8_192)
   * const buffer = rows.block(48) // the shared 64 KB buffer
   * buffer[rows.at] // the block's first double, 0
   */
  block(n: number): Float64Array {
    this.at = 0
    if (n > this.#size / 4) return new Float64Array(n)
    if (this.#used + n > this.#buffer.length) {
      this.#buffer = new Float64Array(this.#size)
      this.#used = 0
    }
    this.at = this.#used
    this.#used += n
    return this.#buffer
  }
}
