/**
 * A 64-bit hash of a string or number identity for `distinct`, in plain 32-bit integer
 * arithmetic (Math.imul, shifts), so every platform computes the same bits. Two MurmurHash3
 * lanes with different constants read the identity 32 bits at a time (two UTF-16 code units,
 * or the two words of a float64), then MurmurHash3's finalizer mixes each lane with the other.
 * Strings and numbers start from different seeds, so `'1'` and `1` are different identities;
 * `-0` is `0`. Not for cryptography: a peer who controls identities can choose collisions.
 */

const scratch = new DataView(new ArrayBuffer(8))

/**
 * Hashes `identity` into `out[0]` (high 32 bits) and `out[1]` (low 32 bits), both unsigned.
 *
 * @example
 * const out = new Uint32Array(2)
 * hash64('device-17', out) // out holds the same two words on every platform
 */
export function hash64(identity: string | number, out: Uint32Array): void {
  let h1: number
  let h2: number
  let length: number
  if (typeof identity === 'number') {
    scratch.setFloat64(0, identity === 0 ? 0 : identity, true)
    h1 = lane1(0x6e756d62, scratch.getUint32(0, true))
    h2 = lane2(0x3a2e1f0d, scratch.getUint32(0, true))
    h1 = lane1(h1, scratch.getUint32(4, true))
    h2 = lane2(h2, scratch.getUint32(4, true))
    length = 8
  } else {
    h1 = 0x73747269
    h2 = 0x9e3779b9
    length = identity.length
    let i = 0
    for (; i + 1 < length; i += 2) {
      const k = identity.charCodeAt(i) | (identity.charCodeAt(i + 1) << 16)
      h1 = lane1(h1, k)
      h2 = lane2(h2, k)
    }
    if (i < length) {
      h1 = lane1(h1, identity.charCodeAt(i))
      h2 = lane2(h2, identity.charCodeAt(i))
    }
  }
  h1 ^= length
  h2 ^= length
  h1 = (h1 + h2) | 0
  h2 = (h2 + h1) | 0
  h1 = finalize(h1)
  h2 = finalize(h2)
  h1 = (h1 + h2) | 0
  h2 = (h2 + h1) | 0
  out[0] = h1
  out[1] = h2
}

function lane1(h: number, k: number): number {
  k = Math.imul(k, 0xcc9e2d51)
  k = Math.imul((k << 15) | (k >>> 17), 0x1b873593)
  h ^= k
  h = (h << 13) | (h >>> 19)
  return (Math.imul(h, 5) + 0xe6546b64) | 0
}

function lane2(h: number, k: number): number {
  k = Math.imul(k, 0x239b961b)
  k = Math.imul((k << 16) | (k >>> 16), 0xab0e9789)
  h ^= k
  h = (h << 17) | (h >>> 15)
  return (Math.imul(h, 5) + 0x38495ab5) | 0
}

function finalize(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  return h ^ (h >>> 16)
}
