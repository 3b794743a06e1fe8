/**
 * Corrections: data for windows that already fired, within the allowed lateness (a
 * `correction` with `previous`) or beyond it (the late lane), in bursts and without end.
 */
import fc from 'fast-check'
import type { ModelConfig } from '../../model/referenceModel.ts'
import { check } from '../invariant.ts'
import { trafficArbitrary } from '../traffic.ts'
import { planScenario } from './planScenario.ts'

const FAMILY = 'corrections'

/** Delayed uploads land in bursts many rounds late: many windows corrected at once. */
export const correctionBursts = planScenario({
  name: 'correction-bursts',
  family: FAMILY,
  summary: '10-50% of events delivered 5-40 rounds late in bursts, lateness 0-300; corrections fold onto what was shown',
  arbitrary: trafficArbitrary({
    allowedLateness: fc.constantFrom(0, 40, 120, 300),
    delayPercent: fc.integer({ min: 10, max: 50 }),
    delayRounds: fc.integer({ min: 5, max: 20 }),
    rounds: fc.integer({ min: 5, max: 40 }),
    sources: fc.integer({ min: 1, max: 4 }),
  }),
})

/**
 * Most windows one event lands in over `specs`: one per tumbling or session spec, `size / slide`
 * per sliding spec, `size / step` per cumulating spec (an event in a block's first step is in
 * every window of the block).
 */
export function mostWindowsPerEvent(specs: ModelConfig['windows']): number {
  let windows = 0
  for (const spec of specs) {
    if (spec.kind === 'sliding') windows += spec.size / spec.slide
    else if (spec.kind === 'cumulating') windows += spec.size / spec.step
    else windows += 1
  }
  return windows
}

/** Where history is kept per window (engineOptions `historyLimit`). */
const HISTORY_LIMIT = 64

/** Every round brings late data for fired windows; histories must stay bounded and end at the shown value. */
export const sustainedCorrectionChurn = planScenario({
  name: 'sustained-correction-churn',
  family: FAMILY,
  summary: 'long runs (80-220 rounds), 30-70% late deliveries within a large lateness; history bound and consistency',
  arbitrary: trafficArbitrary({
    allowedLateness: fc.constantFrom(200, 600, 2000),
    retention: fc.constantFrom(0, 20, Number.POSITIVE_INFINITY),
    delayPercent: fc.integer({ min: 30, max: 70 }),
    delayRounds: fc.integer({ min: 2, max: 15 }),
    rounds: fc.integer({ min: 80, max: 220 }),
    sources: fc.integer({ min: 1, max: 3 }),
    perRound: fc.integer({ min: 1, max: 2 }),
    keys: fc.integer({ min: 1, max: 2 }),
    crashPercent: fc.integer({ min: 0, max: 2 }),
  }),
  hooks: {
    end(engine, meter, testCase) {
      for (const result of engine.results()) {
        meter.checks++
        const history = engine.history(result.window, result.key, result.start, result.end)
        check(history.length <= HISTORY_LIMIT, 'history.bound', () => `${history.length} history entries for ${JSON.stringify(result)}`)
        if (result.status === 'provisional') continue
        const last = history.at(-1)
        check(
          last !== undefined && last.count === result.count && last.sum === result.sum && last.revision === result.revision,
          'history.last',
          () => `history ends with ${JSON.stringify(last)}, results() shows ${JSON.stringify(result)}`,
        )
      }
      meter.checks++
      const stats = engine.stats()
      // A late pane shows data placed since the window's last pane: each applied event is shown late at most once in each window it lands in.
      const perEvent = mostWindowsPerEvent(testCase.config.windows)
      check(
        stats.corrections >= 0 && stats.corrections <= stats.applied * perEvent,
        'stats.corrections',
        () => `corrections ${stats.corrections} for ${stats.applied} applied events, each in at most ${perEvent} windows`,
      )
    },
  },
})
