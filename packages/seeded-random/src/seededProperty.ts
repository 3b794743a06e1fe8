import fc from 'fast-check'

const DEFAULT_SEED = 20_261_129

/** `TIDEMARK_SEED` replays a run; otherwise a fixed seed, so CI is reproducible. */
export const seed = process.env.TIDEMARK_SEED === undefined ? DEFAULT_SEED : Number(process.env.TIDEMARK_SEED)

/**
 * `TIDEMARK_SEED` replays a run; otherwise a fresh seed per run, for the properties of the
 * ordered stream and the persistence codecs, which explore a little more on every run.
 */
export const freshSeed = process.env.TIDEMARK_SEED === undefined ? (Math.random() * 2 ** 31) | 0 : Number(process.env.TIDEMARK_SEED)

export const extensive = process.env.TIDEMARK_EXTENSIVE === '1'

/** Per-test timeout for properties: generous, as CI machines are shared, and longer in extensive mode. */
export const PROPERTY_TIMEOUT = extensive ? 900_000 : 60_000

/** `TIDEMARK_EXTENSIVE=1` runs every property 20 times longer. */
export function numRuns(base: number): number {
  return extensive ? base * 20 : base
}

/**
 * `fc.assert` with the shared seed. A failure prints the seed, fast-check's shrunk
 * counterexample and a one-line repro command.
 */
export function assertSeeded<T>(property: fc.IProperty<T>, testFile: string, testName: string, runs: number): void {
  try {
    if (extensive) fc.assert(property, { seed, numRuns: numRuns(runs) })
    else {
      // Every run happens, however long they take (a time limit on the whole check would pass a
      // property cut short). Only shrinking a failure is bounded: it starts again from the
      // failing case and stops after a few seconds, reporting the best counterexample so far.
      const found = fc.check(property, { seed, numRuns: runs, endOnFailure: true })
      if (found.failed) {
        const replay = { seed, numRuns: runs, interruptAfterTimeLimit: 4000, markInterruptAsFailure: true }
        fc.assert(property, found.counterexamplePath === null ? replay : { ...replay, path: found.counterexamplePath })
        // A failure that does not fail again when replayed (a property with hidden state) is still one.
        throw new Error(fc.defaultReportMessage(found) ?? 'the property failed')
      }
    }
  } catch (error) {
    const repro = `TIDEMARK_SEED=${seed} npx vitest run ${testFile} -t ${JSON.stringify(testName)}`
    const message = `seed ${seed}\nrepro: ${repro}\n${error instanceof Error ? error.message : String(error)}`
    console.error(message)
    throw new Error(message, { cause: error })
  }
}

/**
 * `fc.assert` for async properties, with the fixed seed (`TIDEMARK_SEED` replays another); a
 * failure names the seed and a one-line repro command.
 *
 * @example
 * await assertSeededAsync(fc.asyncProperty(streamPlan(), async (plan) => { ... }), FILE, 'recovers the state', 100)
 */
export async function assertSeededAsync<T>(property: fc.IAsyncProperty<T>, testFile: string, testName: string, runs: number): Promise<void> {
  try {
    await fc.assert(property, { seed, numRuns: numRuns(runs) })
  } catch (error) {
    const repro = `TIDEMARK_SEED=${seed} npx vitest run ${testFile} -t ${JSON.stringify(testName)}`
    throw new Error(`seed ${seed}\nrepro: ${repro}\n${error instanceof Error ? error.message : String(error)}`, { cause: error })
  }
}

/**
 * `fc.assert` with the fresh seed of this run; a failure prints the seed and a one-line repro
 * command, then rethrows with fast-check's report of the shrunk counterexample.
 *
 * @example
 * assertFreshSeeded(fc.property(fc.array(fc.integer()), (xs) => { ... }), FILE, 300)
 */
export function assertFreshSeeded<T>(property: fc.IProperty<T>, testFile: string, runs = 200): void {
  try {
    fc.assert(property, { seed: freshSeed, numRuns: numRuns(runs) })
  } catch (error) {
    const repro = `TIDEMARK_SEED=${freshSeed} npx vitest run ${testFile}`
    console.error(`seed ${freshSeed}; repro: ${repro}`)
    throw new Error(`seed ${freshSeed}; repro: ${repro}\n${String(error)}`, { cause: error })
  }
}
