/**
 * A seeded campaign: iteration `i` of scenario `s` under seed `N` draws its case with the
 * fast-check seed `iterationSeed(N, s, i)`, so any iteration can be re-run alone
 * (`--iteration i`) and a whole campaign is reproducible from the seed it prints. On the first
 * failure the case is shrunk twice: by fast-check (the parameters it was generated from)
 * and by delta debugging (its op list), keeping only candidates that break the same invariant.
 */
import fc from 'fast-check'
import { invariantOf } from './invariant.ts'
import { type AnyScenario, type Meter, newMeter } from './scenario.ts'
import { deltaDebug } from './shrink.ts'

export interface CampaignOptions {
  readonly seed: number
  /** Wall-clock budget; the campaign stops after the iteration that crosses it. */
  readonly seconds?: number
  /** Iteration budget (the release gate uses this, so it is deterministic). */
  readonly iterations?: number
  /** Run only this iteration (a repro). */
  readonly only?: number
  /** Budget for shrinking a failure, split between fast-check and delta debugging. */
  readonly shrinkSeconds?: number
  /** Map cases through `scenario.avoidKnownBugs` (the release gate). */
  readonly avoidKnownBugs?: boolean
  readonly onProgress?: (progress: CampaignProgress) => void
  readonly progressEveryMs?: number
}

export interface CampaignProgress {
  readonly scenario: string
  readonly iterations: number
  readonly meter: Meter
  readonly elapsedMs: number
  readonly budgetMs: number | null
}

export interface CampaignFailure {
  readonly scenario: string
  readonly seed: number
  readonly iteration: number
  readonly iterationSeed: number
  readonly invariant: string
  /** Message of the shrunk case's failure. */
  readonly message: string
  readonly original: unknown
  readonly originalSummary: string
  readonly shrunk: unknown
  readonly shrunkSummary: string
  readonly shrinkAttempts: number
  /** False when the shrink budget ran out before a local minimum was reached. */
  readonly shrinkComplete: boolean
}

export interface CampaignResult {
  readonly scenario: string
  readonly seed: number
  readonly iterations: number
  readonly meter: Meter
  readonly elapsedMs: number
  readonly failure: CampaignFailure | null
}

/** The fast-check seed of one iteration: a 32-bit mix of campaign seed, scenario and index. */
export function iterationSeed(seed: number, scenario: string, iteration: number): number {
  let h = 0x811c9dc5 ^ (seed >>> 0)
  const text = `${scenario}\u0000${seed}\u0000${iteration}`
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h | 0
}

export async function runCampaign(given: AnyScenario, options: CampaignOptions): Promise<CampaignResult> {
  const avoid = given.avoidKnownBugs
  const scenario: AnyScenario =
    options.avoidKnownBugs === true && avoid !== undefined ? { ...given, arbitrary: given.arbitrary.map((c: unknown) => avoid.call(given, c)) } : given
  const started = Date.now()
  const budgetMs = options.seconds === undefined ? null : options.seconds * 1000
  const meter = newMeter()
  const every = options.progressEveryMs ?? 1000
  let lastProgress = started
  let iterations = 0
  const first = options.only ?? 0
  for (let iteration = first; ; iteration++) {
    if (options.only !== undefined && iteration > options.only) break
    if (options.only === undefined) {
      if (options.iterations !== undefined && iteration >= options.iterations) break
      if (budgetMs !== null && Date.now() - started >= budgetMs) break
    }
    const seed = iterationSeed(options.seed, scenario.name, iteration)
    const failed = await runIteration(scenario, seed, meter)
    iterations++
    if (failed !== null) {
      const failure = await shrinkFailure(scenario, options, iteration, seed, failed)
      return { scenario: scenario.name, seed: options.seed, iterations, meter, elapsedMs: Date.now() - started, failure }
    }
    const now = Date.now()
    if (options.onProgress !== undefined && now - lastProgress >= every) {
      lastProgress = now
      options.onProgress({ scenario: scenario.name, iterations, meter, elapsedMs: now - started, budgetMs })
    }
  }
  return { scenario: scenario.name, seed: options.seed, iterations, meter, elapsedMs: Date.now() - started, failure: null }
}

interface FirstFailure {
  readonly testCase: unknown
  readonly error: unknown
  readonly runMs: number
}

async function runIteration(scenario: AnyScenario, seed: number, meter: Meter): Promise<FirstFailure | null> {
  let runMs = 0
  const property = fc.asyncProperty(scenario.arbitrary, async (testCase: unknown) => {
    const t0 = Date.now()
    try {
      await scenario.check(testCase, meter)
    } finally {
      runMs = Date.now() - t0
    }
  })
  const details = await fc.check(property, { seed, numRuns: 1, endOnFailure: true })
  if (!details.failed) return null
  if (details.counterexample === null) throw new Error(`fast-check gave up on ${scenario.name} (seed ${seed})`)
  return { testCase: details.counterexample[0], error: details.errorInstance, runMs }
}

/** Runs a case and tells whether it breaks `invariant` (any other outcome counts as passing). */
export async function breaks(scenario: AnyScenario, testCase: unknown, invariant: string): Promise<{ broken: boolean; error: unknown }> {
  try {
    await scenario.check(testCase, newMeter())
    return { broken: false, error: null }
  } catch (error) {
    return { broken: invariantOf(error) === invariant, error }
  }
}

async function shrinkFailure(
  scenario: AnyScenario,
  options: CampaignOptions,
  iteration: number,
  seed: number,
  failed: FirstFailure,
): Promise<CampaignFailure> {
  const invariant = invariantOf(failed.error)
  const budgetMs = (options.shrinkSeconds ?? 60) * 1000
  // fast-check first: it shrinks the generator's parameters, which is cheap and often drastic.
  const property = fc.asyncProperty(scenario.arbitrary, async (testCase: unknown) => {
    const { broken, error } = await breaks(scenario, testCase, invariant)
    if (broken) throw error
  })
  const details = await fc.check(property, { seed, numRuns: 1, interruptAfterTimeLimit: failed.runMs + budgetMs / 2 })
  let shrunk: unknown = details.failed && details.counterexample !== null ? details.counterexample[0] : failed.testCase
  let attempts = details.numShrinks
  let complete = !details.interrupted
  if (scenario.reduce !== undefined) {
    const reduce = scenario.reduce.bind(scenario)
    const dd = await deltaDebug(
      shrunk,
      reduce,
      async (candidate) => (await breaks(scenario, candidate, invariant)).broken,
      Date.now() + budgetMs / 2,
    )
    shrunk = dd.testCase
    attempts += dd.attempts
    complete &&= dd.complete
  }
  const final = await breaks(scenario, shrunk, invariant)
  const error = final.broken ? final.error : failed.error
  return {
    scenario: scenario.name,
    seed: options.seed,
    iteration,
    iterationSeed: seed,
    invariant,
    message: error instanceof Error ? error.message : String(error),
    original: failed.testCase,
    originalSummary: scenario.describe(failed.testCase),
    shrunk,
    shrunkSummary: scenario.describe(shrunk),
    shrinkAttempts: attempts,
    shrinkComplete: complete,
  }
}
