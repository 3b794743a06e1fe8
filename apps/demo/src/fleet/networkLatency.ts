import type { Prng } from './prng.ts'

/**
 * Draws the delay of one upload: usually tens of milliseconds, sometimes a
 * slow request, and now and then a multi-second stall. Stalls let a later
 * upload overtake an earlier one, so the dashboard sees a temporary gap in a
 * device's seq (the watermark, not proof, then closes the window: `derived`),
 * and a stall longer than the idle timeout lets the watermark move on
 * without that device (`fallback`).
 */
export function networkLatency(rng: Prng): () => number {
  return () => {
    const roll = rng.next()
    if (roll < 0.86) return rng.between(30, 220)
    if (roll < 0.975) return rng.between(220, 900)
    return rng.between(1_500, 4_500)
  }
}
