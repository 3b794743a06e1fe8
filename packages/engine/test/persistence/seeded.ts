import fc from 'fast-check'
import { seed as sharedSeed } from '../seededProperty.ts'

/** Seed for randomized tests: `TIDEMARK_SEED` replays a failure, otherwise a fresh one per run. */
export const seed = process.env.TIDEMARK_SEED === undefined ? (Math.random() * 2 ** 31) | 0 : Number(process.env.TIDEMARK_SEED)

/** `TIDEMARK_EXTENSIVE=1` runs every property 20 times longer. */
export function numRuns(base: number): number {
  return process.env.TIDEMARK_EXTENSIVE === '1' ? base * 20 : base
}

/**
 * `fc.assert` with the shared seed; a failure names the seed and a one-line repro
 * command, after fast-check's own report of the shrunk counterexample.
 */
export function assertSeeded<T>(property: fc.IProperty<T>, testFile: string, runs = 200): void {
  try {
    fc.assert(property, { seed, numRuns: numRuns(runs) })
  } catch (error) {
    throw new Error(`seed ${seed}; repro: TIDEMARK_SEED=${seed} npx vitest run ${testFile}\n${String(error)}`, { cause: error })
  }
}

/**
 * `fc.assert` for async properties, with the suite's fixed seed (`TIDEMARK_SEED` replays
 * another); a failure names the seed and a one-line repro command.
 */
export async function assertSeededAsync<T>(property: fc.IAsyncProperty<T>, testFile: string, testName: string, runs: number): Promise<void> {
  const fixed = sharedSeed
  try {
    await fc.assert(property, { seed: fixed, numRuns: numRuns(runs) })
  } catch (error) {
    const repro = `TIDEMARK_SEED=${fixed} npx vitest run ${testFile} -t ${JSON.stringify(testName)}`
    throw new Error(`seed ${fixed}\nrepro: ${repro}\n${error instanceof Error ? error.message : String(error)}`, { cause: error })
  }
}
