/**
 * The quantile sketch's map from a positive value to a bucket key, and back. A value
 * `x = 2^e · (1 + s)` (`s` in [0, 1), read from its float64 bits) gets `L(x) = e + P(s)` with the
 * cubic `P(s) = (6/35)s³ − (3/5)s² + (10/7)s`, a close, monotone stand-in for log2 (DDSketch's
 * cubically interpolated mapping), and the key `⌊L(x) · multiplier⌋`. Since `d(ln x)/dL ≤ 0.7`
 * everywhere (equality at s = 0 and s = 2/3), a multiplier of `0.7 / ln γ` with
 * `γ = (1 + α) / (1 − α)` makes every bucket's upper bound at most γ times its lower bound, so the
 * bucket's representative `2·lo·hi / (lo + hi)` is within relative accuracy α of every value in it.
 * The cubic uses about 1% more buckets than an exact logarithm would.
 *
 * Only +, −, ×, ÷, √ and bit reads are used, all exactly rounded by IEEE 754, so every platform
 * puts a value in the same bucket and computes the same representative (Math.log may differ in
 * the last bit between engines).
 */

const A = 6 / 35
const B = -3 / 5
const C = 10 / 7
const scratch = new DataView(new ArrayBuffer(8))
/** The same bits through typed arrays (faster than a DataView), in the host's byte order. */
const float = new Float64Array(1)
const words = new Uint32Array(float.buffer)
const HIGH = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0

/** The smallest positive normal float64; smaller magnitudes count as zero. */
export const MIN_NORMAL = 2 ** -1022

/**
 * `ln γ = 2 · atanh(α)` by its series, with IEEE operations only (the same bits everywhere).
 *
 * @example
 * logGamma(0.01) // 0.02000066670666...
 */
export function logGamma(relativeAccuracy: number): number {
  const a2 = relativeAccuracy * relativeAccuracy
  let term = relativeAccuracy
  let sum = 0
  for (let k = 1; sum + term / k !== sum; k += 2) {
    sum += term / k
    term *= a2
  }
  return 2 * sum
}

/**
 * The multiplier for relative accuracy α: keys per unit of `L`.
 *
 * @example
 * mappingMultiplier(0.01) // ≈ 34.999
 */
export function mappingMultiplier(relativeAccuracy: number): number {
  return 0.7 / logGamma(relativeAccuracy)
}

/**
 * The bucket key of `x`, a finite value of at least `MIN_NORMAL`.
 *
 * @example
 * bucketKey(1, mappingMultiplier(0.01)) // 0
 * bucketKey(100, mappingMultiplier(0.01)) // 232
 */
export function bucketKey(x: number, multiplier: number): number {
  float[0] = x
  const hi = words[HIGH] as number
  // The significand's 52 bits as a fraction; both steps are exact.
  const s = ((hi & 0xfffff) * 4_294_967_296 + (words[1 - HIGH] as number)) / 4_503_599_627_370_496
  return Math.floor((((A * s + B) * s + C) * s + (hi >>> 20) - 1023) * multiplier)
}

/**
 * The value a bucket stands for: within relative accuracy of every value whose key is `key`.
 * The bounds' ratio is taken from their significands and exponents, so a bucket whose upper bound
 * lies past the largest double still gets its value (it would overflow as a quotient). May be
 * Infinity for the topmost keys, whose value lies past the largest double (the sketch clamps to
 * its exact maximum).
 *
 * @example
 * bucketValue(232, mappingMultiplier(0.01)) // ≈ 99.91, within 1% of every value in the bucket
 */
export function bucketValue(key: number, multiplier: number): number {
  const t = key / multiplier
  const e = Math.floor(t)
  const next = (key + 1) / multiplier
  const nextE = Math.floor(next)
  const significand = lowerSignificand(t - e)
  // lower / upper, exact: scaling by a power of two only moves the exponent.
  const ratio = (significand / lowerSignificand(next - nextE)) * powerOfTwo(e - nextE)
  return (significand * powerOfTwo(e)) / (0.5 + 0.5 * ratio)
}

/**
 * The significand (in [1, 2)) of the smallest value whose key is `key`, from the fraction `f` of
 * `key / multiplier`: `1 + s` where P(s) = f, solving the cubic by Newton's method. The value is
 * that times 2 to the integer part.
 */
function lowerSignificand(f: number): number {
  let s = f
  // P' ≥ 26/35 on [0, 1] and P(s) is close to s: five steps reach the last bit from s = f.
  for (let i = 0; i < 5; i++) s -= (((A * s + B) * s + C) * s - f) / ((3 * A * s + 2 * B) * s + C)
  return 1 + s
}

function powerOfTwo(e: number): number {
  if (e > 1023) return Number.POSITIVE_INFINITY
  if (e < -1022) return powerOfTwo(e + 52) * 2.220446049250313e-16
  scratch.setUint32(0, (e + 1023) * 0x100000)
  scratch.setUint32(4, 0)
  return scratch.getFloat64(0)
}
