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

  /**
   * `n` zeroed doubles. Blocks above a quarter of a buffer get their own: they would waste most
   * of a shared one.
   *
   * @example
   * const rows = new DoubleSlab(8_192)
   * rows.take(48) // Float64Array(48), all zeros, a view into a shared 64 KB buffer
   */
  take(n: number): Float64Array {
    if (n > this.#size / 4) return new Float64Array(n)
    if (this.#used + n > this.#buffer.length) {
      this.#buffer = new Float64Array(this.#size)
      this.#used = 0
    }
    const block = this.#buffer.subarray(this.#used, this.#used + n)
    this.#used += n
    return block
  }
}
