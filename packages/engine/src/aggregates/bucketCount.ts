/**
 * The largest count a sketch's bucket holds: 2^53 − 1, the last integer a float64 keeps exactly.
 * A bucket that would pass it stays at it (it saturates).
 */
export const MAX_BUCKET_COUNT = Number.MAX_SAFE_INTEGER

/**
 * `a + b` for bucket counts (non-negative integers), saturating at `MAX_BUCKET_COUNT`. Below it
 * the sum is exact; at it, every order of the same adds and merges gives it too, so merges stay
 * commutative and associative even when a peer's state holds counts near the limit (a float sum
 * past 2^53 rounds, and adding 1 three times would differ from adding 3).
 *
 * The counts added may themselves be plain float sums of non-negative integers: such a sum is
 * exact below 2^53 and at least 2^53 whenever the exact sum is, so clamping it once here gives
 * what clamping each step would.
 *
 * @example
 * addBucketCounts(2, 3) // 5
 * addBucketCounts(MAX_BUCKET_COUNT, 1) // MAX_BUCKET_COUNT
 */
export function addBucketCounts(a: number, b: number): number {
  return Math.min(a + b, MAX_BUCKET_COUNT)
}
