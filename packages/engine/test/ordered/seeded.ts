import fc from 'fast-check'

/** Seed for randomized tests: `TIDEMARK_SEED` replays a failure, otherwise a fresh one per run. */
export const seed = process.env.TIDEMARK_SEED === undefined ? (Math.random() * 2 ** 31) | 0 : Number(process.env.TIDEMARK_SEED)

/** `TIDEMARK_EXTENSIVE=1` runs every property 20 times longer. */
export function numRuns(base: number): number {
  return process.env.TIDEMARK_EXTENSIVE === '1' ? base * 20 : base
}

/**
 * `fc.assert` with the shared seed; a failure prints the seed and a one-line repro command,
 * then rethrows with fast-check's report of the shrunk counterexample.
 */
export function assertSeeded<T>(property: fc.IProperty<T>, testFile: string, runs = 100): void {
  try {
    fc.assert(property, { seed, numRuns: numRuns(runs) })
  } catch (error) {
    const repro = `TIDEMARK_SEED=${seed} npx vitest run ${testFile}`
    console.error(`seed ${seed}; repro: ${repro}`)
    throw new Error(`seed ${seed}; repro: ${repro}\n${String(error)}`, { cause: error })
  }
}

/** Per-test timeout for properties: generous, as CI machines are shared, and longer in extensive mode. */
export const PROPERTY_TIMEOUT = process.env.TIDEMARK_EXTENSIVE === '1' ? 900_000 : 60_000
