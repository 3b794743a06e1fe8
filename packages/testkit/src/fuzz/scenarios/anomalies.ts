/**
 * Anomaly-heavy input: a large share of every batch is malformed (every shape in
 * malformed.ts), mixed with valid events at the edges of validity, seq reuse with other
 * content, and hostile names. Every anomaly must carry the model's reason and index.
 */
import fc from 'fast-check'
import { trafficArbitrary } from '../traffic.ts'
import { planScenario } from './planScenario.ts'

export const anomalyHeavy = planScenario({
  name: 'anomaly-heavy',
  family: 'anomalies',
  summary: '20-70% malformed inputs of every shape, edge-valid events, seq reuse/gaps/overflow, prototype names',
  arbitrary: trafficArbitrary({
    invalidPercent: fc.integer({ min: 20, max: 70 }),
    sources: fc.integer({ min: 1, max: 8 }),
    keys: fc.integer({ min: 1, max: 6 }),
    dupPercent: fc.integer({ min: 0, max: 30 }),
    backPercent: fc.integer({ min: 0, max: 15 }),
  }),
})
