/** Seeds for storm runs: a fixed one from `STORM_SEED` replays a run. */

/**
 * Mulberry32: a small seeded generator (the same sequence in Node and in the pages).
 *
 * @example
 * const random = seeded(42)
 * random() // 0.6011037519201636, every time
 */
export function seeded(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/**
 * The seed from `STORM_SEED` when set, else a fresh one. Print it: `STORM_SEED=<seed>` replays
 * the run's schedule and readings.
 *
 * @example
 * const seed = stormSeed()
 * console.log(`seed=${seed} (replay: STORM_SEED=${seed} pnpm e2e e2e/tests/storm.spec.ts)`)
 */
export function stormSeed(): number {
  const fromEnv = Number(process.env.STORM_SEED)
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : Math.floor(Math.random() * 2 ** 31) + 1
}
