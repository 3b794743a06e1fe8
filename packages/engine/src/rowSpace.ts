/**
 * Storage for peers' cells kept as numbers in fixed windows (`WindowState`), carved out of
 * shared 64 KB buffers.
 *
 * A cold join builds 10k windows at once. Their rows in one JavaScript array each are 4 MB of
 * new objects that V8's young-generation collector copies, twice, while the join runs: about a
 * third of the join's time. Rows in typed arrays over shared buffers leave only a small view
 * object per window on the collected heap. A window that outgrows its rows takes a larger
 * block and leaves the old one unused; a buffer is freed when no window holds a block of it
 * (windows of one join are retired together by retention, so buffers empty out together).
 */

/** Doubles per shared buffer (64 KB). */
const BUFFER = 8_192

let buffer = new Float64Array(0)
let used = 0

/**
 * `rows` zeroed rows of six doubles.
 *
 * @example
 * const values = takeRows(8) // Float64Array(48), all zeros
 */
export function takeRows(rows: number): Float64Array {
  const n = 6 * rows
  // Large blocks get their own buffer: they would waste most of a shared one.
  if (n > BUFFER / 4) return new Float64Array(n)
  if (used + n > buffer.length) {
    buffer = new Float64Array(BUFFER)
    used = 0
  }
  const block = buffer.subarray(used, used + n)
  used += n
  return block
}
