/**
 * Bounded memory over long runs with cross-window replay: devices keep re-sending runs of
 * old events that span many windows, some inside the lateness horizon (duplicates, counted
 * once) and some behind it, after their dedup memory was released (late lane, never counted
 * twice). See checks/longRun.ts for the bounds and the conservation check.
 */
import fc from 'fast-check'
import { cumulating, session, sliding, tumbling } from '@tidemark/engine'
import { type LongRunCase, memoryBounds, runLong } from '../checks/longRun.ts'
import type { Scenario } from '../scenario.ts'

export const boundedMemoryCrossWindowReplay: Scenario<LongRunCase> = {
  name: 'bounded-memory-cross-window-replay',
  family: 'memory',
  summary: 'long steady runs (300-4000 rounds, up to ~100k events) replaying old events across windows; stats under config-derived bounds',
  arbitrary: fc.record({
    spec: fc.constantFrom(tumbling(10), tumbling(60), sliding(40, 10), sliding(120, 5), cumulating(60, 10), session(8), session(30)),
    lag: fc.constantFrom(0, 5, 25),
    allowedLateness: fc.constantFrom(0, 20, 100),
    retention: fc.constantFrom(0, 10, 80),
    idleTimeout: fc.constantFrom(Number.POSITIVE_INFINITY, 50, 400),
    limits: fc.option(fc.record({ maxLateEvents: fc.integer({ min: 16, max: 2000 }) }), { nil: undefined }),
    sources: fc.integer({ min: 2, max: 12 }),
    keys: fc.integer({ min: 1, max: 6 }),
    seqMode: fc.constantFrom('seq', 'none', 'mixed'),
    rounds: fc.integer({ min: 300, max: 4000 }),
    slotMs: fc.integer({ min: 1, max: 20 }),
    stepMs: fc.integer({ min: 1, max: 10 }),
    perRound: fc.integer({ min: 1, max: 3 }),
    jitter: fc.integer({ min: 0, max: 30 }),
    reorderRounds: fc.integer({ min: 0, max: 4 }),
    replayPercent: fc.integer({ min: 0, max: 20 }),
    replayDepth: fc.integer({ min: 10, max: 3000 }),
    replaySize: fc.integer({ min: 1, max: 40 }),
    offlinePercent: fc.integer({ min: 0, max: 2 }),
    offlineRounds: fc.integer({ min: 2, max: 60 }),
    fragment: fc.integer({ min: 0, max: 60 }),
    quietEvery: fc.oneof(fc.constant(0), fc.integer({ min: 40, max: 300 })),
    rngSeed: fc.integer(),
  }),
  check: (testCase, meter) => runLong(testCase, meter),
  describe(c) {
    const b = memoryBounds(c)
    return `${c.rounds} rounds x ${c.sources} sources x ${c.perRound}/round, ${c.spec.id} lag ${c.lag} lateness ${c.allowedLateness} retention ${c.retention} idle ${c.idleTimeout} ${c.seqMode}, replay ${c.replayPercent}% depth ${c.replayDepth}, quiet every ${c.quietEvery}; bounds windows ${b.openWindows} cells ${b.cells} dedup ${b.dedupEntries}`
  },
}
