/**
 * The order of encoded states: bytes compared one by one, a shorter prefix first. Equal
 * encodings mean bit-identical states (every built-in aggregate encodes canonically), and the
 * order breaks ties between two states written under one cell version, as `compareCells` does
 * for the built-in fields.
 *
 * @example
 * compareBytes(new Uint8Array([1, 2]), new Uint8Array([1, 3])) // -1
 * compareBytes(new Uint8Array([1]), new Uint8Array([1, 0])) // -1
 */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number)
    if (d !== 0) return d < 0 ? -1 : 1
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1
}

/**
 * True when two encodings are the same bytes.
 *
 * @example
 * sameBytes(spread.encode(a), spread.encode(b)) // replicas converged on this state
 */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return compareBytes(a, b) === 0
}
