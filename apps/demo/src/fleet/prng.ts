/**
 * A seeded pseudo-random generator (mulberry32), so a simulated fleet, a storm
 * plan or a test run can be replayed from the seed it printed.
 */
import { seededRandom } from '@tidemark/seeded-random'

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

/**
 * A `Prng` over `seededRandom(seed)`: the same draws as every other seeded part of the repo.
 *
 * @example
 * const random = createPrng(7)
 * random.index(12) // a device slot, the same one for seed 7 every time
 */
export function createPrng(seed: number): Prng {
  const next = seededRandom(seed)
  return {
    next,
    between: (min, max) => min + next() * (max - min),
    chance: (p) => next() < p,
    index: (n) => Math.floor(next() * n),
  }
}
