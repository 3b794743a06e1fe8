/**
 * Watermark lag: sources whose event time runs behind the others hold the watermark back
 * while the rest keep sending in small, interleaved batches.
 */
import fc from 'fast-check'
import { boundedOutOfOrderness } from '@tidemark/engine'
import { BASE_RANGES, trafficArbitrary } from '../traffic.ts'
import { planScenario } from './planScenario.ts'

const FAMILY = 'watermarkLag'

/** Many sources, one far behind, batches cut almost everywhere; idle timeouts let the laggard go. */
export const fragmentedWatermarkLag = planScenario({
  name: 'fragmented-watermark-lag',
  family: FAMILY,
  summary: 'up to 8 sources, one lagging 0-120 ms in event time, batches fragmented to 1-3 events; model, fold, recovery',
  arbitrary: trafficArbitrary({
    watermark: fc.constantFrom(0, 3, 10, 30).map(boundedOutOfOrderness),
    sources: fc.integer({ min: 2, max: 8 }),
    rounds: fc.integer({ min: 5, max: 40 }),
    laggard: fc.integer({ min: 0, max: 120 }),
    jitter: fc.integer({ min: 0, max: 25 }),
    fragment: fc.integer({ min: 50, max: 95 }),
    idleTimeout: fc.constantFrom(Number.POSITIVE_INFINITY, 30, 80, 200),
  }),
})

/**
 * A watermark held back by a laggard while the other sources open window after window:
 * the window bound (and the late lane and batch bounds) must refuse with `overflow`, never
 * grow, never lose what was accepted, and serve again once the watermark moves on.
 */
export const boundedWindowLaggingWatermark = planScenario({
  name: 'bounded-window-lagging-watermark',
  family: FAMILY,
  summary: 'maxWindows 3-40, maxLateEvents 1-20, maxBatch 4-50 under a laggard holding W; overflow filtered into the model; probe after',
  arbitrary: trafficArbitrary({
    watermark: fc.constantFrom(0, 5, 20).map(boundedOutOfOrderness),
    sources: fc.integer({ min: 2, max: 6 }),
    keys: fc.integer({ min: 1, max: 6 }),
    rounds: fc.integer({ min: 5, max: 50 }),
    laggard: fc.integer({ min: 40, max: 300 }),
    retention: fc.constantFrom(0, 10, 50),
    limits: fc.record({
      maxWindows: fc.integer({ min: 3, max: 40 }),
      maxLateEvents: fc.integer({ min: 1, max: 20 }),
      maxBatch: fc.integer({ min: 4, max: 50 }),
    }),
    probe: fc.constant(true),
    delayPercent: BASE_RANGES.delayPercent,
  }),
})
