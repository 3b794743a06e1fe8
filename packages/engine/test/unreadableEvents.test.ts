/**
 * Events that are not plain objects (docs/bad-input.md B07, B08): a class instance's fields are
 * read once, into the copy that is placed, kept on the late lane and logged, so a getter read
 * again cannot change what was validated, and the log keeps fields a structured clone of the
 * instance would drop; an unreadable input is an invalid_event in every path, ordered ones too.
 */
import { describe, expect, it } from 'vitest'
import { createEngine, manual, session, type StreamEvent, tumbling, type WalOp } from '../src/index.ts'
import { TidemarkEngine } from '../src/core/engine.ts'
import { createOrderedStream, orderEvents } from '../src/ordered.ts'

/** A reading whose fields live behind getters on its class, as generated message classes have them. */
class Reading {
  readonly #ts: number
  reads = 0
  idReads = 0
  constructor(ts: number) {
    this.#ts = ts
  }
  get id(): string {
    this.idReads++
    return `r${this.#ts}`
  }
  get source(): string {
    return 'd1'
  }
  get ts(): number {
    // Valid when validated, NaN on any later read.
    return ++this.reads > 1 ? Number.NaN : this.#ts
  }
  get value(): number {
    return 2
  }
}

function revoked(): unknown {
  const { proxy, revoke } = Proxy.revocable({}, {})
  revoke()
  return proxy
}

describe('events that are not plain objects', () => {
  it('a class instance is read once: what was validated is placed, and the log holds every field', () => {
    const ops: WalOp[] = []
    const engine = new TidemarkEngine({ windows: tumbling(100), watermark: manual(), now: () => 0 })
    engine.attachLog({ record: (op) => {
        ops.push(structuredClone(op))
        return Promise.resolve()
      }, blocked: null, stats: () => ({ walRecords: ops.length, walBytes: 0 }) })
    const reading = new Reading(10)
    const receipt = engine.ingest([reading as unknown as StreamEvent])
    expect(receipt.accepted).toBe(1)
    expect(reading.reads).toBe(1)
    expect(reading.idReads).toBe(1)
    expect(engine.results().map((r) => [r.start, r.count, r.sum])).toEqual([[0, 1, 2]])
    // The log's copy replays to the same results (a clone of the instance itself would be {}).
    const logged = ops.find((op) => op.kind === 'ingest')
    expect(logged).toMatchObject({ events: [{ id: 'r10', source: 'd1', ts: 10, value: 2 }] })
    const replayed = new TidemarkEngine({ windows: tumbling(100), watermark: manual(), now: () => 0 })
    for (const op of ops) replayed.replay(op)
    expect(replayed.results()).toEqual(engine.results())
  })

  it('a Proxy over a class instance is read once too; one over a plain object is read as a plain object (docs/bad-input.md B07)', () => {
    const engine = createEngine({ windows: tumbling(100), watermark: manual(), now: () => 0 })
    const reading = new Reading(10)
    // Traps that pass every read on: the prototype the engine sees is the class's.
    const proxied = new Proxy(reading, { get: (target, field) => Reflect.get(target, field) })
    expect(engine.ingest([proxied as unknown as StreamEvent]).accepted).toBe(1)
    expect(reading.reads).toBe(1)
    expect(engine.results().map((r) => [r.start, r.count, r.sum])).toEqual([[0, 1, 2]])
    // Over a plain object, the prototype is Object.prototype: no copy, each field read where it is used.
    let tsReads = 0
    const plain = new Proxy({ id: 'p', source: 'd2', ts: 20, value: 3 }, {
      get: (target, field) => {
        if (field === 'ts') tsReads++
        return Reflect.get(target, field)
      },
    })
    expect(engine.ingest([plain as StreamEvent]).accepted).toBe(1)
    expect(tsReads).toBeGreaterThan(1)
  })

  it('a late class instance goes to the late lane as the copy that was validated', () => {
    const engine = createEngine({ windows: tumbling(100), watermark: manual(), allowedLateness: 0, now: () => 0 })
    engine.advanceWatermark(1_000)
    engine.ingest([new Reading(10) as unknown as StreamEvent])
    expect(engine.lateEvents().map((late) => late.event)).toEqual([{ id: 'r10', source: 'd1', ts: 10, value: 2 }])
  })

  it('an unreadable input is an invalid_event; the rest of the batch is applied, in the engine, the ordered stream and orderEvents', () => {
    const good: StreamEvent = { id: 'a', source: 'd1', seq: 1, ts: 10, value: 1 }
    const engine = createEngine({ windows: tumbling(100), watermark: manual(), now: () => 0 })
    const receipt = engine.ingest([revoked() as StreamEvent, good])
    expect([receipt.accepted, receipt.anomalies.map((a) => a.reason)]).toEqual([1, ['invalid_event']])
    const stream = createOrderedStream({ watermark: manual(), now: () => 0 })
    const pushed = stream.push([revoked() as StreamEvent, good])
    expect([pushed.accepted, pushed.anomalies.map((a) => a.reason)]).toEqual([1, ['invalid_event']])
    expect(stream.pending()).toBe(1)
    const ordered = orderEvents([revoked() as StreamEvent, good])
    expect([ordered.ordered.map((e) => e.id), ordered.anomalies.map((a) => a.reason)]).toEqual([['a'], ['invalid_event']])
  })

  it('a batch element that throws when read (a Proxy over an array) is an invalid_event; the rest is applied once, and the engine serves on', () => {
    const events: StreamEvent[] = [
      { id: 'a', source: 'd1', seq: 1, ts: 10, value: 1 },
      { id: 'b', source: 'd1', seq: 2, ts: 20, value: 2 },
      { id: 'c', source: 'd1', seq: 3, ts: 30, value: 4 },
    ]
    const batch = new Proxy(events, {
      get(target, key, receiver) {
        if (key === '1') throw new Error('element 1 cannot be read')
        return Reflect.get(target, key, receiver)
      },
    })
    for (const withSessions of [false, true]) {
      const logged: WalOp[] = []
      const engine = new TidemarkEngine({ windows: withSessions ? [tumbling(100), session(5)] : tumbling(100), watermark: manual(), now: () => 0 })
      engine.attachLog({ record: (op) => {
          logged.push(structuredClone(op))
          return Promise.resolve()
        }, blocked: null, stats: () => ({ walRecords: logged.length, walBytes: 0 }) })
      const receipt = engine.ingest(batch)
      expect([receipt.accepted, receipt.anomalies.map((a) => [a.reason, a.index, a.detail])]).toEqual([2, [['invalid_event', 1, 'the input could not be read (a getter threw, or a revoked Proxy)']]])
      expect(engine.results().filter((r) => r.window === 'tumbling:100').map((r) => [r.count, r.sum])).toEqual([[2, 5]])
      const op = logged.at(-1)
      expect(op?.kind === 'ingest' ? op.events.map((e) => e.id) : op).toEqual(['a', 'c'])
      expect(engine.ingest([{ id: 'd', source: 'd1', seq: 2, ts: 40, value: 8 }]).accepted).toBe(1)
      expect(engine.results().filter((r) => r.window === 'tumbling:100').map((r) => r.count)).toEqual([3])
    }
  })
})
