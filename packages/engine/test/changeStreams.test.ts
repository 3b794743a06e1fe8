/**
 * How changes leave the engine and events enter it besides `ingest` (docs/semantics.md, Changes):
 * subscribers, `changes()` as a ReadableStream, `writable` as a WritableStream
 * with overflow backpressure.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  createEngine,
  isOverflowError,
  manual,
  OverflowError,
  type StreamEvent,
  tumbling,
  type WindowChange,
} from '../src/index.ts'
import { TidemarkEngine } from '../src/core/engine.ts'
import { reading } from '../src/testing/index.ts'

afterEach(() => {
  vi.unstubAllGlobals()
})

describe('subscribers', () => {
  it('a throwing subscriber stops neither the other subscribers nor the engine', () => {
    const reported: unknown[] = []
    vi.stubGlobal('reportError', (error: unknown) => reported.push(error))
    const engine = createEngine({ windows: tumbling(10) })
    const boom = new Error('listener failed')
    const before: WindowChange[] = []
    const after: WindowChange[] = []
    engine.subscribe((changes) => before.push(...changes))
    engine.subscribe(() => {
      throw boom
    })
    engine.subscribe((changes) => after.push(...changes))

    const receipt = engine.ingest([reading('d1', undefined, 1, 1)])
    expect(receipt.accepted).toBe(1)
    expect(after.map((c) => c.type)).toEqual(['provisional'])
    expect(before).toEqual(after)
    expect(reported).toEqual([boom])

    engine.ingest([reading('d1', undefined, 12, 1)])
    expect(after.map((c) => c.type)).toEqual(['provisional', 'on_time', 'provisional'])
    expect(engine.results()[0]).toMatchObject({ start: 0, status: 'on_time' })
    expect(reported).toEqual([boom, boom])
  })

  it('close() drops subscribers before it detaches transports: a status a transport reports as it lets go reaches none of them', async () => {
    const reported: unknown[] = []
    vi.stubGlobal('reportError', (error: unknown) => reported.push(error))
    const engine = createEngine({ windows: tumbling(10) })
    // A transport (the Yjs binding does this) says it is offline when the engine closes.
    engine.replica.onClose(() => engine.replica.setSyncStatus({ state: 'offline', lastSync: null, pendingLocalUpdates: 0, peers: 0, refusal: null }, 0))
    let heard = 0
    // A subscriber that asks the engine when to tick next, as tickWhenDue does.
    engine.subscribe(() => {
      heard++
      engine.nextTickAt()
    })
    engine.ingest([reading('d1', undefined, 1, 1)])
    expect(heard).toBe(1)
    await engine.close()
    expect(reported).toEqual([])
    expect(heard).toBe(1)
  })

  it('unsubscribe stops notifications for that subscriber only', () => {
    const engine = createEngine({ windows: tumbling(10) })
    let a = 0
    let b = 0
    const stopA = engine.subscribe((changes) => {
      a += changes.length
    })
    engine.subscribe((changes) => {
      b += changes.length
    })
    engine.ingest([reading('d1', undefined, 1, 1)])
    stopA()
    engine.ingest([reading('d1', undefined, 2, 1)])
    expect([a, b]).toEqual([1, 2])
  })

  it('a subscriber that calls the engine: every subscriber hears the batches in the order they happened', () => {
    const engine = createEngine({ windows: tumbling(10), allowedLateness: 100 })
    const heard: string[][] = [[], [], []]
    const note = (who: number) => (changes: readonly WindowChange[]) => {
      heard[who]?.push(changes.map((c) => c.type).join())
    }
    engine.subscribe(note(0))
    engine.subscribe((changes) => {
      // Fires the window from inside the provisional pane's notification.
      if (changes.some((c) => c.type === 'provisional')) engine.advanceWatermark(20)
    })
    engine.subscribe(note(1))
    engine.subscribe(note(2))
    engine.ingest([reading('d1', undefined, 1, 3)])
    expect(heard).toEqual([
      ['provisional', 'on_time'],
      ['provisional', 'on_time'],
      ['provisional', 'on_time'],
    ])
    expect(engine.results()[0]?.status).toBe('on_time')
  })

  it('a subscriber that ticks (or ingests nothing) on every notification: the call returns; a call that changes nothing at all is not announced', () => {
    let t = 1_000
    const engine = createEngine({ windows: tumbling(10), now: () => t })
    let heard = 0
    // Stops by itself at 100 calls, so that a loop fails the test instead of hanging it.
    engine.subscribe(() => {
      if (++heard < 100) engine.tick()
    })
    // Each tick publishes a batch with no change, which the subscriber answered with another tick: for ever.
    // A tick with nothing due changes nothing: not announced, so the subscriber ticks once.
    expect(engine.ingest([reading('d1', undefined, 1, 3)]).accepted).toBe(1)
    expect(heard).toBe(1)
    const other = createEngine({ windows: tumbling(10), now: () => t })
    let heardOther = 0
    other.subscribe(() => {
      if (++heardOther < 100) other.ingest([])
    })
    other.tick()
    expect(heardOther).toBe(1)
    // A call from a batch without change that does change a window is announced.
    const third = createEngine({ windows: tumbling(10), watermark: manual() })
    third.ingest([reading('d1', undefined, 1, 3)])
    const seen: string[] = []
    third.subscribe((changes) => {
      seen.push(changes.map((c) => c.type).join())
      if (seen.length === 1) third.advanceWatermark(20)
    })
    third.tick()
    expect(seen).toEqual(['', 'on_time'])
    t += 5
    expect(engine.ingest([reading('d1', undefined, 12, 4)]).accepted).toBe(1)
    expect(engine.results().map((r) => [r.start, r.count, r.status])).toEqual([
      [0, 1, 'on_time'],
      [10, 1, 'provisional'],
    ])
  })

  it('a subscriber that ingests a new event on every change: its 1,001st call within one notification throws, changing nothing; every accepted event counts once and the engine serves', () => {
    const engine = createEngine({ windows: tumbling(10), allowedLateness: 100 })
    let calls = 0
    const refused: string[] = []
    let heard = 0
    engine.subscribe(() => {
      heard++
      // Stops by itself at 5,000 calls, so that a loop fails the test instead of hanging it.
      if (calls >= 5_000) return
      try {
        engine.ingest([reading('d1', ++calls + 1, 5, 1)])
      } catch (error) {
        refused.push((error as Error).message)
      }
    })
    expect(engine.ingest([reading('d1', 1, 5, 1)]).accepted).toBe(1)
    expect(calls).toBe(1_001)
    expect(refused).toEqual([
      'engine called by its subscribers 1000 times within one notification: a subscriber that calls it on every change never settles',
    ])
    // The outer batch and the subscriber's 1,000 accepted calls, each heard once.
    expect(heard).toBe(1_001)
    expect(engine.stats().applied).toBe(1_001)
    expect(engine.results()[0]?.count).toBe(1_001)
    // The next notification is a delivery of its own: the subscriber's calls are taken again.
    engine.subscribe(() => {}) // a second listener changes nothing about the count
    expect(engine.ingest([reading('d1', 10_000, 5, 1)]).accepted).toBe(1)
    expect(refused).toHaveLength(2)
    expect(engine.results()[0]?.count).toBe(1_000 + 1_001 + 1)
  })

  it("a subscriber that reports a new sync status or a peer anomaly on every notification: past the bound the report throws and changes nothing", () => {
    const engine = createEngine({ windows: tumbling(10) })
    let reports = 0
    const refused: string[] = []
    engine.subscribe(() => {
      // Stops by itself at 5,000 reports, so that a loop fails the test instead of hanging it.
      if (reports >= 5_000) return
      reports++
      for (const report of [
        () => engine.replica.reportAnomaly('invalid_remote_cell', `cell ${reports}`),
        () => engine.replica.setSyncStatus({ state: 'connected', lastSync: reports, pendingLocalUpdates: 0, peers: 1, refusal: null }, reports),
      ]) {
        try {
          report()
        } catch (error) {
          refused.push((error as Error).message)
        }
      }
    })
    engine.tick()
    // Each status is a notification the subscriber answers with another: 1,000 of them, then both reports are refused.
    expect(reports).toBe(1_001)
    expect(refused).toEqual([
      expect.stringContaining('engine called by its subscribers 1000 times within one notification'),
      expect.stringContaining('engine called by its subscribers 1000 times within one notification'),
    ])
    expect(engine.stats().docBytes).toBe(1_000)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(1_000)
  })
})

describe('changes() ReadableStream', () => {
  it('delivers each batch of changes in order and closes on close()', async () => {
    const engine = createEngine({ windows: tumbling(10) })
    const seen: (readonly WindowChange[])[] = []
    engine.subscribe((changes) => {
      if (changes.length > 0) seen.push(changes)
    })
    const reader = engine.changes().getReader()
    engine.ingest([reading('d1', undefined, 1, 1)])
    engine.tick() // no change: nothing enqueued
    engine.ingest([reading('d1', undefined, 15, 1)])
    engine.advanceWatermark(30)

    const read: (readonly WindowChange[])[] = []
    for (let i = 0; i < 3; i++) {
      const next = await reader.read()
      expect(next.done).toBe(false)
      if (!next.done) read.push(next.value)
    }
    expect(read).toEqual(seen)
    expect(read.map((batch) => batch.map((c) => c.type))).toEqual([['provisional'], ['on_time', 'provisional'], ['on_time']])

    await engine.close()
    expect(await reader.read()).toEqual({ done: true, value: undefined })
  })

  it('close() resolves after a reader cancelled its changes() stream', async () => {
    const engine = createEngine({ windows: tumbling(10) })
    const stream = engine.changes()
    await stream.cancel()
    await expect(engine.close()).resolves.toBeUndefined()
  })

  it('close() resolves after a for-await loop over changes() ended early', async () => {
    const engine = createEngine({ windows: tumbling(10) })
    const stream = engine.changes()
    engine.ingest([reading('d1', undefined, 1, 1)])
    let read = 0
    for await (const batch of stream) {
      expect(batch).toHaveLength(1)
      read++
      break
    }
    // The loop really ran and left early, rather than finding the stream already closed.
    expect(read).toBe(1)
    await expect(engine.close()).resolves.toBeUndefined()
  })
})

describe('writable WritableStream', () => {
  it('ingests written batches', async () => {
    const engine = createEngine({ windows: tumbling(10) })
    const writer = engine.writable.getWriter()
    await writer.write([reading('d1', 1, 1, 2), reading('d1', 2, 2, 3)])
    await writer.write([reading('d1', 2, 2, 3)])
    expect(engine.stats()).toMatchObject({ ingested: 3, applied: 2, duplicates: 1 })
    expect(engine.results()[0]).toMatchObject({ count: 2, sum: 5 })
  })

  it('a write the engine cannot take rejects with OverflowError (backpressure, not growth)', async () => {
    const engine = createEngine({ windows: tumbling(10), limits: { maxBatch: 2 } })
    const writer = engine.writable.getWriter()
    const error = await writer.write([reading('d1', 1, 1, 1), reading('d1', 2, 2, 1), reading('d1', 3, 3, 1)]).then(
      () => null,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(OverflowError)
    expect(isOverflowError(error)).toBe(true)
    expect(isOverflowError(new Error('other'))).toBe(false)
    expect(engine.stats()).toMatchObject({ ingested: 3, applied: 0 })
    expect(engine.stats().anomalies.overflow).toBe(3)
  })

  it('after an overflow, engine.writable takes later batches again', async () => {
    const engine = createEngine({ windows: tumbling(10), limits: { maxBatch: 2 } })
    const tooBig: StreamEvent[] = [reading('d1', 1, 1, 1), reading('d1', 2, 2, 1), reading('d1', 3, 3, 1)]
    const first = engine.writable.getWriter()
    await expect(first.write(tooBig)).rejects.toBeInstanceOf(OverflowError)
    first.releaseLock()
    // The caller slows down and resends in smaller pieces.
    const retry = engine.writable.getWriter()
    await retry.write(tooBig.slice(0, 2))
    expect(engine.stats().applied).toBe(2)
  })

  it('after a batch the log could not make durable, engine.writable takes later batches again', async () => {
    const engine = new TidemarkEngine({ windows: tumbling(10), now: () => 0 })
    let full = true
    engine.attachLog({
      record: () => (full ? Promise.reject(new Error('QuotaExceededError: the disk is full')) : Promise.resolve()),
      blocked: null,
      stats: () => ({ walRecords: 0, walBytes: 0 }),
    })
    const first = engine.writable.getWriter()
    await expect(first.write([reading('d1', 1, 1, 1)])).rejects.toThrow('the disk is full')
    first.releaseLock()
    full = false
    const retry = engine.writable.getWriter()
    await retry.write([reading('d1', 2, 2, 1)])
    expect(engine.stats().applied).toBe(2)
  })
})

describe('after close()', () => {
  it('subscribe and changes() throw engine is closed, as every later call does', async () => {
    const engine = createEngine({ windows: tumbling(10) })
    await engine.close()
    expect(() => engine.subscribe(() => {})).toThrow('engine is closed')
    expect(() => engine.changes()).toThrow('engine is closed')
  })
})
