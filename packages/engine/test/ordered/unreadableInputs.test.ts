import { describe, expect, it } from 'vitest'
import type { StreamEvent } from '../../src/core/event.ts'
import { orderEvents } from '../../src/ordered/orderEvents.ts'
import { flat, ids, manualStream } from './streamHelpers.ts'

/** A class instance whose `ts` getter answers `first` on its first read and NaN on every later one. */
class FickleReading {
  readonly id: string
  readonly source = 'f'
  readonly value = 1
  #reads = 0
  readonly #first: number

  constructor(id: string, first: number) {
    this.id = id
    this.#first = first
  }

  get ts(): number {
    return this.#reads++ === 0 ? this.#first : Number.NaN
  }
}

function revokedProxy(): StreamEvent {
  const { proxy, revoke } = Proxy.revocable({ id: 'r', source: 'f', ts: 1, value: 1 }, {})
  revoke()
  return proxy
}

describe('inputs that are not plain objects (docs/bad-input.md B07)', () => {
  it('the ordered stream reads a class instance once: what it validated is what it holds and emits', () => {
    const { stream } = manualStream()
    const receipt = stream.push([{ id: 'x', source: 'b', ts: 7, value: 1 }, new FickleReading('t', 5) as unknown as StreamEvent, { id: 'y', source: 'b', ts: 9, value: 1 }])
    expect(receipt.accepted).toBe(3)
    stream.advanceWatermark(Number.POSITIVE_INFINITY)
    const emitted = flat(stream.flushReady())
    expect(emitted.map((e) => [e.id, e.ts])).toEqual([
      ['t', 5],
      ['x', 7],
      ['y', 9],
    ])
    expect(stream.stats().pending).toBe(0)
  })

  it('the ordered stream refuses an input it cannot read, and keeps serving', () => {
    const { stream } = manualStream()
    const receipt = stream.push([revokedProxy(), { id: 'x', source: 'b', ts: 7, value: 1 }])
    expect(receipt.anomalies.map((a) => [a.reason, a.index])).toEqual([['invalid_event', 0]])
    stream.advanceWatermark(10)
    expect(ids(stream.flushReady())).toEqual(['x'])
  })

  it('orderEvents sorts and keeps the copy it validated', () => {
    const { ordered, anomalies } = orderEvents([{ id: 'x', source: 'b', ts: 7, value: 1 }, new FickleReading('t', 5) as unknown as StreamEvent, revokedProxy()])
    expect(ordered.map((e) => [e.id, e.ts])).toEqual([
      ['t', 5],
      ['x', 7],
    ])
    expect(anomalies.map((a) => [a.reason, a.index])).toEqual([['invalid_event', 2]])
  })
})

/** A batch (a Proxy over an array, so `Array.isArray` holds) whose element `at` throws when read. */
function batchThrowingAt(events: StreamEvent[], at: number): StreamEvent[] {
  return new Proxy(events, {
    get(target, key, receiver) {
      if (key === String(at)) throw new Error(`element ${at} cannot be read`)
      return Reflect.get(target, key, receiver)
    },
  })
}

describe('a batch element that throws when read (docs/bad-input.md B08)', () => {
  it('the ordered stream refuses it as invalid_event and applies the rest: what it emits is what it counted', () => {
    const { stream } = manualStream()
    const batch = [
      { id: 'a', source: 's', seq: 1, ts: 10, value: 1 },
      { id: 'b', source: 's', seq: 2, ts: 20, value: 1 },
      { id: 'c', source: 's', seq: 3, ts: 30, value: 1 },
    ]
    const receipt = stream.push(batchThrowingAt(batch, 1))
    expect(receipt.anomalies).toEqual([{ reason: 'invalid_event', index: 1, detail: 'the input could not be read (a getter threw, or a revoked Proxy)' }])
    expect([receipt.accepted, receipt.rejected]).toEqual([2, 1])
    stream.advanceWatermark(100)
    expect(ids(stream.flushReady())).toEqual(['a', 'c'])
    const s = stream.stats()
    expect([s.pushed, s.accepted, s.readyEmitted, s.rejected]).toEqual([3, 2, 2, 1])
  })
})
