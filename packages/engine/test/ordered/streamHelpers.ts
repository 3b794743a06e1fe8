import type { StreamEvent } from '../../src/input/event.ts'
import type { OrderedEvent } from '../../src/ordered/eventOrder.ts'
import { createOrderedStream } from '../../src/ordered/orderedStream.ts'
import type { OrderedBatch, OrderedStreamOptions } from '../../src/ordered/orderedStreamApi.ts'
import { manual } from '../../src/time/watermarkStrategy.ts'

/** A processing-time clock the test moves by hand. */
export function fakeClock(start = 0): { now: () => number; advance: (ms: number) => void } {
  let t = start
  return { now: () => t, advance: (ms) => (t += ms) }
}

export function ev(source: string, seq: number | undefined, ts: number, id = `${source}-${seq ?? ts}`): StreamEvent {
  return seq === undefined ? { id, source, ts, value: ts } : { id, source, seq, ts, value: ts }
}

export function ids(batches: readonly OrderedBatch[], kind?: 'ready' | 'correction'): string[] {
  return batches.filter((b) => kind === undefined || b.kind === kind).flatMap((b) => b.events.map((e) => e.id))
}

export function flat(batches: readonly OrderedBatch[]): OrderedEvent[] {
  return batches.flatMap((b) => b.events)
}

export function manualStream(options: OrderedStreamOptions = {}) {
  const clock = fakeClock()
  return { stream: createOrderedStream({ watermark: manual(), now: clock.now, ...options }), clock }
}

