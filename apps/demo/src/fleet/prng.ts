/**
 * A seeded pseudo-random generator (mulberry32), so a simulated fleet, a storm
 * plan or a test run can be replayed from the seed it printed.
 */
export interface Prng {
  /** Uniform in [0, 1). */
  next(): number
  /** Uniform in [min, max). */
  between(min: number, max: number): number
  /** True with probability `p`. */
  chance(p: number): boolean
  /** Uniform integer in [0, n). */
  index(n: number): number
}

export function createPrng(seed: number): Prng {
  let state = seed >>> 0
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return {
    next,
    between: (min, max) => min + next() * (max - min),
    chance: (p) => next() < p,
    index: (n) => Math.floor(next() * n),
  }
}
