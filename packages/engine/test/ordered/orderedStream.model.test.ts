import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { StreamEvent } from '../../src/input/event.ts'
import type { OrderedEvent } from '../../src/ordered/eventOrder.ts'
import { createOrderedStream } from '../../src/ordered/orderedStream.ts'
import type { OrderedBatch, OrderedStream } from '../../src/ordered/orderedStreamApi.ts'
import { manual, boundedOutOfOrderness } from '../../src/time/watermarkStrategy.ts'
import { cut, disorderedEvents, reconnectBurst, type Step, signature, steps, streamSetup } from './arbitraries.ts'
import { ReferenceStream } from './orderedReference.ts'
import { assertFreshSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'

const FILE = 'packages/engine/test/ordered/orderedStream.model.test.ts'

interface Setup {
  readonly lag: number | null
  readonly allowedLateness: number
  readonly onLate: 'emit_correction' | 'drop'
  readonly batchSize: number
}

function streamFor(setup: Setup): OrderedStream {
  return createOrderedStream({
    watermark: setup.lag === null ? manual() : boundedOutOfOrderness(setup.lag),
    allowedLateness: setup.allowedLateness,
    onLate: setup.onLate,
    batchSize: setup.batchSize,
    now: () => 0,
  })
}

/** Batches are non-empty, at most `batchSize`, ready before corrections, and only a kind's last batch may be short. */
function checkBatches(batches: readonly OrderedBatch[], batchSize: number): { ready: OrderedEvent[]; corrections: OrderedEvent[] } {
  const ready: OrderedEvent[] = []
  const corrections: OrderedEvent[] = []
  let seenCorrection = false
  batches.forEach((batch, i) => {
    expect(batch.events.length).toBeGreaterThan(0)
    expect(batch.events.length).toBeLessThanOrEqual(batchSize)
    const next = batches[i + 1]
    if (next !== undefined && next.kind === batch.kind) expect(batch.events.length).toBe(batchSize)
    if (batch.kind === 'correction') seenCorrection = true
    else expect(seenCorrection).toBe(false)
    for (const e of batch.events) expect(['proven', 'derived', 'fallback', 'unknown']).toContain(e.basis)
    ;(batch.kind === 'ready' ? ready : corrections).push(...batch.events)
  })
  return { ready, corrections }
}

/** Drives stream and model through the same pushes, advances and flushes, comparing at every step. */
function runAgainstModel(setup: Setup, pushes: readonly { events: StreamEvent[]; step: Step }[]): void {
  const stream = streamFor(setup)
  const model = new ReferenceStream(setup)
  const flushBoth = () => {
    const got = checkBatches(stream.flushReady(), setup.batchSize)
    const want = model.flush()
    expect(got.ready.map(signature)).toEqual(want.ready.map(signature))
    expect(got.corrections.map(signature)).toEqual(want.corrections.map(signature))
  }
  for (const { events, step } of pushes) {
    const receipt = stream.push(events)
    const expected = model.push(events)
    expect(receipt.accepted).toBe(expected.accepted)
    expect(receipt.late).toBe(expected.late)
    expect(receipt.rejected).toBe(expected.rejected)
    expect(receipt.anomalies.length).toBe(expected.rejected)
    expect(receipt.duplicates + receipt.beyondLateness).toBe(expected.duplicatesOrBeyond)
    expect(receipt.accepted + receipt.duplicates + receipt.beyondLateness + receipt.rejected).toBe(events.length)
    if (setup.lag === null) {
      const t = stream.watermark() === Number.NEGATIVE_INFINITY ? step.advance : stream.watermark() + step.advance
      stream.advanceWatermark(t)
      model.advance(t)
    }
    expect(stream.watermark()).toBe(model.watermark)
    if (step.flush) flushBoth()
    expect(stream.pending()).toBe(model.pending())
  }
  stream.advanceWatermark(Number.POSITIVE_INFINITY)
  model.advance(Number.POSITIVE_INFINITY)
  flushBoth()
  expect(stream.pending()).toBe(0)
  expect(stream.lateEvents().map((l) => l.event.id).length).toBeLessThanOrEqual(model.lateLane.length)
}

describe('ordered stream against the reference model (sort everything, filter by watermark)', () => {
  it('random disorder and duplicates, manual or bounded watermark, any batch size', () => {
    assertFreshSeeded(
      fc.property(streamSetup, disorderedEvents, steps, (setup, events, plan) => runAgainstModel(setup, cut(events, plan))),
      FILE,
      300,
    )
  }, PROPERTY_TIMEOUT)

  it('lagging watermark: one source far behind holds W while the others run ahead', () => {
    assertFreshSeeded(
      fc.property(streamSetup, disorderedEvents, steps, fc.integer({ min: 50, max: 300 }), (setup, events, plan, behind) => {
        const lagged = events.map((e) => (e.source === 'b' && Number.isFinite(e.ts) ? { ...e, ts: Math.max(0, e.ts - behind) } : e))
        runAgainstModel({ ...setup, lag: setup.lag ?? 40 }, cut(lagged, plan))
      }),
      FILE,
      200,
    )
  }, PROPERTY_TIMEOUT)

  it('reconnect bursts: a source offline for a while delivers its whole backlog at once', () => {
    assertFreshSeeded(
      fc.property(streamSetup, reconnectBurst, steps, (setup, pushes, plan) => {
        runAgainstModel(
          setup,
          pushes.map((events, i) => ({ events, step: plan[i % plan.length] as Step })),
        )
      }),
      FILE,
      200,
    )
  }, PROPERTY_TIMEOUT)

  it('what is emitted does not depend on when flushReady is called or on the batch size', () => {
    assertFreshSeeded(
      fc.property(streamSetup, disorderedEvents, steps, fc.integer({ min: 1, max: 50 }), (setup, events, plan, otherSize) => {
        const pushes = cut(events, plan)
        const drive = (batchSize: number, flushEveryStep: boolean) => {
          const stream = streamFor({ ...setup, batchSize })
          const ready: string[] = []
          const corrections: string[] = []
          const collect = () => {
            for (const batch of stream.flushReady()) (batch.kind === 'ready' ? ready : corrections).push(...batch.events.map(signature))
          }
          for (const { events: batch, step } of pushes) {
            stream.push(batch)
            if (setup.lag === null) stream.advanceWatermark(stream.watermark() === Number.NEGATIVE_INFINITY ? step.advance : stream.watermark() + step.advance)
            if (flushEveryStep || step.flush) collect()
          }
          stream.advanceWatermark(Number.POSITIVE_INFINITY)
          collect()
          return { ready, corrections: corrections.sort() }
        }
        const reference = drive(setup.batchSize, false)
        expect(drive(otherSize, true)).toEqual(reference)
        expect(drive(1, false)).toEqual(reference)
      }),
      FILE,
      200,
    )
  }, PROPERTY_TIMEOUT)
})
