import fc from 'fast-check'

const DEFAULT_SEED = 20_261_129

/** `TIDEMARK_SEED` replays a run; otherwise a fixed seed, so CI is reproducible. */
export const seed = process.env.TIDEMARK_SEED === undefined ? DEFAULT_SEED : Number(process.env.TIDEMARK_SEED)

export const extensive = process.env.TIDEMARK_EXTENSIVE === '1'

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
    // Outside extensive mode, shrinking a failure stops after a few seconds (the best counterexample so far is reported).
    fc.assert(property, extensive ? { seed, numRuns: numRuns(runs) } : { seed, numRuns: runs, interruptAfterTimeLimit: 4000 })
  } catch (error) {
    const repro = `TIDEMARK_SEED=${seed} npx vitest run ${testFile} -t ${JSON.stringify(testName)}`
    const message = `seed ${seed}\nrepro: ${repro}\n${error instanceof Error ? error.message : String(error)}`
    console.error(message)
    throw new Error(message, { cause: error })
  }
}
