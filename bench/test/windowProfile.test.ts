/**
 * bench/README.md: the window profiles run Tidemark, the plain-loop floor, the rules floor, the
 * cells floor and RxJS on the same events; the rules and cells floors' accepted, duplicate and
 * late-list counts and their window totals equal Tidemark's, and RxJS's window totals are checked equal to Tidemark's,
 * window by window, in every run. Here on a small fleet with late, re-sent and invalid readings.
 */
import { type StreamEvent, tumbling } from '@tidemark/engine'
import { describe, expect, it } from 'vitest'
import type { Contender } from '../harness/contender.ts'
import { type ProfileFigures, runProfile } from '../harness/profile.ts'
import { windowProfile } from '../harness/windowProfile.ts'
import { deviceStream } from '../workload.ts'
import { fakeClock } from './fakeClock.ts'

function smallFleet(): StreamEvent[][] {
  const batches = deviceStream({ events: 3_000, sources: 6, lateShare: 0.1, duplicateShare: 0.05, spacing: 1_000, lateBy: 300_000, seed: 7, batchSize: 100 })
  // Invalid readings the engine and the rules floor must both refuse: a value that is not finite, no id.
  ;(batches[3] as StreamEvent[]).push({ ...(batches[3]?.[0] as StreamEvent), id: 'bad-value', value: Number.NaN })
  ;(batches[5] as StreamEvent[]).push({ ...(batches[5]?.[0] as StreamEvent), id: '' })
  return batches
}

async function run(): Promise<ProfileFigures> {
  const clock = fakeClock()
  const definition = windowProfile({
    name: 'small-fleet',
    description: 'small fleet',
    batches: smallFleet(),
    specs: [tumbling(60_000)],
    outOfOrderness: 10_000,
    allowedLateness: 60_000,
  })
  // Every run charges 600 ms, so warm-up is two runs and no repetitions.
  const contenders = definition.contenders.map(
    (c): Contender => ({
      ...c,
      run: (context) => {
        clock.charge(600)
        return c.run(context)
      },
    }),
  )
  return runProfile({ ...definition, contenders }, { only: null, rounds: 1, warmup: null, memory: false, settleGc: false, progress: () => {}, stopwatch: clock.stopwatch })
}

describe('a window profile', () => {
  it('checks the window totals of Tidemark against RxJS and the rules and cells floors, window by window', async () => {
    const figures = await run()
    expect(figures.contenders.map((c) => c.name)).toEqual(['tidemark', 'plain-loop', 'rules-loop', 'cells-loop', 'rxjs'])
    for (const pair of [
      ['tidemark', 'rxjs'],
      ['tidemark', 'rules-loop'],
      ['tidemark', 'cells-loop'],
    ]) {
      const agreement = figures.agreement.find((a) => a.pair.join() === pair.join())
      expect(agreement?.compared, pair.join()).toBeGreaterThan(20)
      expect(agreement?.mismatches).toEqual([])
    }
    expect(figures.ratios.map((r) => r.name)).toEqual(['engine/floor', 'rules/floor', 'engine/rules', 'cells/floor', 'engine/cells', 'engine-vs-rxjs'])
  })

  it.each(['rules-loop', 'cells-loop'])('gives the %s floor the accepted, duplicate, late-list and refused counts of Tidemark', async (name) => {
    const figures = await run()
    const engine = figures.contenders.find((c) => c.name === 'tidemark')
    const floor = figures.contenders.find((c) => c.name === name)
    expect(engine?.counts.duplicates).toBeGreaterThan(0)
    expect(engine?.counts.beyondLateness).toBeGreaterThan(0)
    expect(engine?.counts.rejected).toBe(2)
    expect({ accepted: floor?.counts.accepted, duplicates: floor?.counts.duplicates, lateList: floor?.end.lateList, refused: floor?.end.anomalies }).toEqual({
      accepted: engine?.counts.accepted,
      duplicates: engine?.counts.duplicates,
      lateList: engine?.counts.beyondLateness,
      refused: engine?.counts.rejected,
    })
  })
})
