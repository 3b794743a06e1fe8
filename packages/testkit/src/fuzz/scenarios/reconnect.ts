/**
 * Reconnects: a device goes offline (idle in processing time, so the watermark moves on
 * without it), then uploads its backlog in fragments, interleaved with live traffic, and
 * re-sends part of what it had already delivered.
 */
import fc from 'fast-check'
import { boundedOutOfOrderness } from '@tidemark/engine'
import { trafficArbitrary } from '../traffic.ts'
import { planScenario } from './planScenario.ts'

export const fragmentedReconnectBursts = planScenario({
  name: 'fragmented-reconnect-bursts',
  family: 'reconnect',
  summary: 'offline episodes of 3-30 rounds, idle timeouts, backlog uploaded in fragments with 0-80% re-sent',
  arbitrary: trafficArbitrary({
    watermark: fc.constantFrom(0, 5, 20).map(boundedOutOfOrderness),
    sources: fc.integer({ min: 2, max: 6 }),
    rounds: fc.integer({ min: 10, max: 50 }),
    offlinePercent: fc.integer({ min: 5, max: 25 }),
    offlineRounds: fc.integer({ min: 3, max: 30 }),
    resendPercent: fc.integer({ min: 0, max: 80 }),
    idleTimeout: fc.constantFrom(20, 60, 150, Number.POSITIVE_INFINITY),
    fragment: fc.integer({ min: 40, max: 95 }),
    allowedLateness: fc.constantFrom(0, 10, 40, 150),
  }),
})
