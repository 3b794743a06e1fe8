/**
 * The long-run memory check (fuzz/checks/longRun.ts) against cases the campaign found: the
 * traffic must stay inside the model `memoryBounds` derives its bounds from.
 */
import { describe, expect, it } from 'vitest'
import { sliding } from '@tidemark/engine'
import { type LongRunCase, memoryBounds, runLong } from '../src/fuzz/checks/longRun.ts'
import { newMeter } from '../src/fuzz/scenario.ts'

describe('long runs', () => {
  it('a source whose offline stretch ends in a pause sends its backlog then (seed 4242, iteration 592)', () => {
    // m0 goes offline at round 92 until 119; rounds 117-128 are a pause. Its backlog stayed until
    // its next stretch (rounds 129-151) ended, so it held W at 454 for 59 rounds, not the 33 the
    // bounds allow: 31 open windows at round 150 against a bound of 29.
    const c: LongRunCase = {
      spec: sliding(40, 10),
      lag: 0,
      allowedLateness: 0,
      retention: 0,
      idleTimeout: Number.POSITIVE_INFINITY,
      limits: undefined,
      sources: 11,
      keys: 1,
      seqMode: 'seq',
      rounds: 300,
      slotMs: 1,
      stepMs: 5,
      perRound: 1,
      jitter: 4,
      reorderRounds: 1,
      replayPercent: 19,
      replayDepth: 511,
      replaySize: 9,
      offlinePercent: 2,
      offlineRounds: 31,
      fragment: 0,
      quietEvery: 129,
      rngSeed: 2147483637,
    }
    expect(memoryBounds(c).openWindows).toBe(29)
    let most = 0
    const meter = newMeter()
    runLong(c, meter, (stats) => {
      most = Math.max(most, stats.openWindows)
    })
    expect(most).toBeLessThanOrEqual(29)
    expect(meter.checks).toBeGreaterThan(0)
  })
})
