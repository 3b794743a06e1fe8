import { describe, expect, it } from 'vitest'
import type { StreamEvent } from '../../src/input/event.ts'
import type { OrderedStream } from '../../src/ordered/orderedStreamApi.ts'
import { orderEvents } from '../../src/ordered/orderEvents.ts'
import { boundedOutOfOrderness } from '../../src/time/watermarkStrategy.ts'
import { ev, flat, ids, manualStream } from './streamHelpers.ts'

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

describe('an event whose getter calls the stream it is pushed to', () => {
  /** A class instance whose `ts` getter runs `call` on its first read (a flush, a push), keeping what it returned or threw (and throwing it on). */
  class MeddlingReading {
    readonly id = 'm'
    readonly source = 'm'
    readonly value = 1
    readonly seq = 1
    outcome: unknown = 'not read'
    readonly #call: () => unknown

    constructor(call: () => unknown) {
      this.#call = call
    }

    get ts(): number {
      if (this.outcome === 'not read') {
        try {
          this.outcome = this.#call()
        } catch (error) {
          this.outcome = error
          throw error
        }
      }
      return 50
    }
  }

  // Inside push the batch is half applied and its watermark read already: a flush there would release
  // a's 28 and b's 29 (a's 30 moves W to 30) before b's 28, on time at W 28, is placed behind them.
  const inner: Record<string, (stream: OrderedStream) => unknown> = {
    flushReady: (stream) => flat(stream.flushReady()),
    'push, then flushReady': (stream) => {
      stream.push([ev('c', 1, 60)])
      return flat(stream.flushReady())
    },
  }
  for (const [call, run] of Object.entries(inner)) {
    it(`cannot call ${call} from a getter: the ready events come out in order, each counted once`, () => {
      const { stream } = manualStream({ watermark: boundedOutOfOrderness(0) })
      // W 28 (a holds it); b's 29 waits.
      stream.push([ev('a', 1, 10), ev('a', 2, 28), ev('b', 1, 40), ev('b', 2, 29)])
      const ready = flat(stream.flushReady())
      const meddler = new MeddlingReading(() => run(stream))
      const receipt = stream.push([ev('a', 3, 30), meddler as unknown as StreamEvent, ev('b', 3, 28)])
      if (Array.isArray(meddler.outcome)) ready.push(...meddler.outcome)
      stream.advanceWatermark(100)
      const batches = stream.flushReady()
      ready.push(...flat(batches.filter((b) => b.kind === 'ready')))
      const readyTs = ready.map((e) => e.ts)
      expect(readyTs, `ready ${JSON.stringify(ready.map((e) => e.id))}`).toEqual([...readyTs].sort((x, y) => x - y))
      const s = stream.stats()
      expect(s.pushed).toBe(s.accepted + s.duplicates + s.beyondLateness + s.rejected)
      expect(ready.length + ids(batches, 'correction').length).toBe(s.accepted)
      // The inner call is refused, and so is the event whose getter made it; the rest is applied.
      expect(meddler.outcome).toEqual(new Error('ordered stream called from inside its own push (by a getter of an event being pushed): call it once push returned'))
      expect(receipt.anomalies.map((a) => [a.reason, a.index])).toEqual([['invalid_event', 1]])
      expect(ready.map((e) => e.id)).toEqual(['a-1', 'a-2', 'b-3', 'b-2', 'a-3', 'b-1'])
    })
  }
})
