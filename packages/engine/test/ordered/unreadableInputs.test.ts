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
