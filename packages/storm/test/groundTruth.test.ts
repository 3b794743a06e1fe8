import { createEngine, type StreamEvent, tumbling } from '@tidemark/engine'
import { assertSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { windowDigest } from '../src/contract/windowDigest.ts'
import { digestDiff } from '../src/driver/digestDiff.ts'
import { groundTruth, tumblingTruth } from '../src/driver/groundTruth.ts'

const FILE = 'packages/storm/test/groundTruth.test.ts'
const truth = tumblingTruth({ windowMs: 1_000, allowedLateness: 2_000 })

describe('groundTruth', () => {
  it("equals a real engine's window values and late lane, for devices ingesting interleaved batches", () => {
    const name = "equals a real engine's window values and late lane, for devices ingesting interleaved batches"
    let runsWithLateLane = 0
    assertSeeded(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 30 }),
        (seed, devices, batch, batches) => {
          const engine = createEngine({ windows: tumbling(1_000), allowedLateness: 2_000, retention: 1e12 })
          const sources = Array.from({ length: devices }, (_, k) => ({ source: `device-${k}`, seed: seed + k }))
          for (let b = 0; b < batches; b++) {
            for (const device of sources) {
              const events: StreamEvent[] = []
              for (let seq = b * batch + 1; seq <= (b + 1) * batch; seq++) events.push(truth.reading(device.seed, device.source, seq))
              engine.ingest(events)
            }
          }
          const lateIds = engine.lateEvents().map((late) => late.event.id)
          const figures = groundTruth(
            truth,
            sources.map((d) => ({ ...d, produced: batch * batches, lateIds: lateIds.filter((id) => id.startsWith(`${d.source}#`)), firstBatchEnd: batch })),
          )
          expect(figures.problems).toEqual([])
          expect(figures.digest).toBe(windowDigest(engine.results()))
          expect(figures.produced).toBe(devices * batch * batches)
          expect(figures.counted + figures.lateLane).toBe(figures.produced)
          expect(figures.lateLane).toBe(lateIds.length)
          expect(figures.windows).toBe(engine.results().length)
          if (figures.lateLane > 0) runsWithLateLane++
        },
      ),
      FILE,
      name,
      60,
    )
    // The late lane was exercised, not only the happy path.
    expect(runsWithLateLane).toBeGreaterThan(10)
  }, PROPERTY_TIMEOUT)

  it('reports a late-lane entry that appears twice, that was never produced, or that cannot be beyond lateness', () => {
    // d#2 (ts …020) shares the first window with d#1 (ts …010): no watermark can have closed it.
    const figures = groundTruth(truth, [{ source: 'd', seed: 7, produced: 500, lateIds: ['d#2', 'd#2', 'd#999'], firstBatchEnd: 1 }])
    expect(figures.problems).toEqual([
      'd: d#2 is on the late lane twice',
      'd: d#2 (ts 1700000000020) is on the late lane but its window is within lateness of the device\'s earlier readings (max ts 1700000000010)',
      'd: late-lane entry d#999 is not a reading it produced',
    ])
    // Readings in the first batch are not judged: the device did not know its own clock yet.
    expect(groundTruth(truth, [{ source: 'd', seed: 7, produced: 10, lateIds: ['d#2'], firstBatchEnd: 5 }]).problems).toEqual([])
  })

  it('counts nothing and shows no window for devices that produced nothing', () => {
    expect(groundTruth(truth, [{ source: 'd', seed: 1, produced: 0, lateIds: [], firstBatchEnd: 20 }])).toEqual({
      produced: 0,
      counted: 0,
      lateLane: 0,
      digest: '',
      windows: 0,
      problems: [],
    })
  })

  it('refuses a window or lateness that is not a size', () => {
    expect(() => tumblingTruth({ windowMs: 0, allowedLateness: 0 })).toThrow('tumblingTruth: windowMs must be a positive integer, got 0')
    expect(() => tumblingTruth({ windowMs: 1_000, allowedLateness: -1 })).toThrow(/allowedLateness must be a non-negative number of ms, got -1/)
  })
})

describe('digestDiff', () => {
  it('lists the rows that differ, with expected and actual count/sum, at most limit of them', () => {
    const expected = 'tumbling:1000|k0|0|2|5\ntumbling:1000|k1|0|1|1\ntumbling:1000|k2|0|1|1'
    const actual = 'tumbling:1000|k0|0|1|3\ntumbling:1000|k2|0|1|1\ntumbling:1000|k3|0|4|4'
    expect(digestDiff(expected, actual)).toEqual([
      'tumbling:1000|k0|0: expected 2/5, got 1/3',
      'tumbling:1000|k1|0: expected 1/1, got none',
      'tumbling:1000|k3|0: expected none, got 4/4',
    ])
    expect(digestDiff(expected, actual, 1)).toHaveLength(1)
    expect(digestDiff(expected, expected)).toEqual([])
  })
})
