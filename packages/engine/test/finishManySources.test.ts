/**
 * Finishing many sources one call each must cost about what each finish changes, not a pass over
 * every source per call (which made 10,000 finishes quadratic). Measured in passes over the
 * frontiers' source clocks (each starts by asking the sources map for an iterator), never in
 * time: a return to a pass per finish counts thousands where a few are allowed.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { boundedOutOfOrderness, createEngine, type StreamEvent, tumbling } from '../src/index.ts'
import { createOrderedStream } from '../src/ordered/orderedStream.ts'
import { SourceClock } from '../src/time/sourceClock.ts'

const SOURCES = 2_000
/** Passes allowed in all: the calm passes before the heaps are built, and their builds. */
const FEW_PASSES = 12

type Walk = (this: Map<unknown, unknown>, ...args: unknown[]) => unknown
/** The ways to walk a map, each of which a pass over the sources could take. */
const WALKS = ['values', 'entries', 'keys', 'forEach', Symbol.iterator] as const
const walks = WALKS.map((walk) => Map.prototype[walk] as Walk)
const holdsClocks = (map: Map<unknown, unknown>) => (walks[0] as Walk).call(map) as IterableIterator<unknown>
let passes = 0

/** Counts every walk over a map of source clocks (the frontiers' `sources`): one per pass over them. */
function countPasses(): void {
  passes = 0
  WALKS.forEach((walk, i) => {
    const original = walks[i] as Walk
    Object.defineProperty(Map.prototype, walk, {
      configurable: true,
      writable: true,
      value(this: Map<unknown, unknown>, ...args: unknown[]) {
        if (holdsClocks(this).next().value instanceof SourceClock) passes++
        return original.apply(this, args)
      },
    })
  })
}

function stopCounting(): void {
  WALKS.forEach((walk, i) => {
    Object.defineProperty(Map.prototype, walk, { configurable: true, writable: true, value: walks[i] })
  })
}

afterEach(stopCounting)

/** One reading per source, `s0` at 1,000 ms, `s1` at 1,001 ms, … all heard at the same processing time. */
function fleet(): StreamEvent[] {
  return Array.from({ length: SOURCES }, (_, i) => ({ id: `s${i}-1`, source: `s${i}`, seq: 1, ts: 1_000 + i, value: 1 }))
}

/** What W is after finishing `s0` … `s{k}`: the lowest event time of the sources left, then the furthest a finished one reached. */
const expectedWatermark = (k: number) => (k < SOURCES - 1 ? 1_000 + k + 1 : 1_000 + SOURCES - 1)

interface Finishing {
  finishSource(source: string): unknown
  watermark(): number
}

/** Finishes every source in turn, checking W after each, and counts the passes the finishes made. */
function finishAll(target: Finishing): { passes: number; watermarks: number } {
  countPasses()
  let wrong = 0
  for (let k = 0; k < SOURCES; k++) {
    void target.finishSource(`s${k}`)
    if (target.watermark() !== expectedWatermark(k)) wrong++
  }
  stopCounting()
  return { passes, watermarks: wrong }
}

describe('finishing many sources one by one costs no pass over every source per finish', () => {
  for (const [scenario, idleTimeout, later] of [
    ['every source idle (silent past idleTimeout)', 1_000, 10_000],
    ['no idleTimeout, at the processing time they were heard at', Number.POSITIVE_INFINITY, 0],
  ] as const) {
    it(`ordered stream: ${scenario}`, () => {
      let now = 1_000_000
      const stream = createOrderedStream({ watermark: boundedOutOfOrderness(0), idleTimeout, now: () => now })
      stream.push(fleet())
      now += later
      stream.flushReady()
      expect(finishAll(stream)).toEqual({ passes: expect.any(Number), watermarks: 0 })
      expect(passes).toBeLessThanOrEqual(FEW_PASSES)
      // Every event below the last one (which W reaches, and advanceWatermark(Infinity) releases).
      expect(stream.flushReady().flatMap((b) => b.events)).toHaveLength(SOURCES - 1)
    })

    it(`engine: ${scenario}`, () => {
      let now = 1_000_000
      const engine = createEngine({ windows: tumbling(60_000), watermark: boundedOutOfOrderness(0), idleTimeout, now: () => now })
      engine.ingest(fleet())
      now += later
      engine.tick()
      expect(finishAll(engine)).toEqual({ passes: expect.any(Number), watermarks: 0 })
      expect(passes).toBeLessThanOrEqual(FEW_PASSES)
      expect(engine.stats().finishedSources).toBe(SOURCES)
    })
  }
})
