/**
 * The storm's seeded generator: `seededRandom` of `@tidemark/seeded-random` (mulberry32), the one
 * the storm pages draw their reconnect jitter from, so a seed replays in Node and in the pages.
 * Exported from the driver as `seeded`.
 */
export { seededRandom as seeded } from '@tidemark/seeded-random'

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
