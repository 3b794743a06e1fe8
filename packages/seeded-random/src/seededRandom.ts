/**
 * A seeded pseudo-random generator (mulberry32): `seededRandom(seed)` returns a function whose
 * draws are uniform in [0, 1) and depend only on the seed, in Node and in every browser. Seeded
 * tests, fuzz cases, benchmark workloads and the e2e storm pages all draw from it, so a seed
 * they print replays the same events; changing a single operation here changes every replay.
 *
 * Well spread from the first draw even for neighbouring seeds (`1`, `2`, ...). Not for
 * cryptography. The state is 32 bits: the seed is taken as `seed >>> 0` (fractions dropped,
 * negatives and values past 2^32 wrap), the sequence repeats after 2^32 draws, and every draw
 * is a multiple of 2^-32.
 *
 * @example
 * const random = seededRandom(42)
 * random() // 0.6011037519201636, every time
 * const pick = Math.floor(random() * 6) // a die roll that replays from seed 42
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}
