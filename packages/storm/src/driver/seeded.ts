/**
 * The driver's seeded generator and the run's seed. The generator is mulberry32, kept here
 * (a published package cannot depend on the workspace's private `@tidemark/seeded-random`);
 * `test/seeded.test.ts` pins it to that package's `seededRandom`, draw for draw, so a seed
 * means the same sequence in the storm driver as everywhere else in the repository.
 */

/**
 * A generator of draws uniform in [0, 1) that depend only on `seed` (taken as `seed >>> 0`).
 * Not for cryptography.
 *
 * @example
 * const random = seeded(42)
 * random() // 0.6011037519201636, every time
 */
export function seeded(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/**
 * The seed from `STORM_SEED` when set (a positive integer, else this throws), or a fresh one.
 * Print it: `STORM_SEED=<seed>` replays the run's toggle schedule and readings.
 *
 * @example
 * const seed = stormSeed()
 * console.log(`seed=${seed} (replay: STORM_SEED=${seed} pnpm e2e e2e/tests/storm.spec.ts)`)
 */
export function stormSeed(env: Readonly<Record<string, string | undefined>> = process.env, fresh: () => number = Math.random): number {
  const text = env.STORM_SEED
  if (text === undefined || text === '') return Math.floor(fresh() * 2 ** 31) + 1
  const seed = Number(text)
  if (!Number.isSafeInteger(seed) || seed <= 0) throw new Error(`STORM_SEED must be a positive integer, got ${JSON.stringify(text)}`)
  return seed
}
