import { describe, expect, it } from 'vitest'
import { isOverflowError, type StreamEvent } from '@tidemark/engine'
import { batchSize, decodeEvents, encodeEvents, type EventBatch } from '../src/protocol/eventColumns.ts'
import { IngestQueue } from '../src/page/ingestQueue.ts'
import type { ReceiptCounts } from '../src/protocol/messages.ts'

function events(source: string, from: number, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${source}#${from + i}`, source, seq: from + i, ts: from + i, value: 1 }))
}

const counts = (accepted: number): ReceiptCounts => ({ accepted, late: 0, duplicates: 0, beyondLateness: 0, rejected: 0, anomalies: [] })

/** A queue whose host is a list of what it was sent. */
function queue(maxQueuedEvents = 1_000) {
  const sent: { req: number; batch: EventBatch }[] = []
  const q = new IngestQueue({ maxQueuedEvents, send: (req, batch) => sent.push({ req, batch }) })
  const seqs = () => sent.map(({ batch }) => (decodeEvents(batch) as StreamEvent[]).map((e) => e.seq))
  return { q, sent, seqs }
}

describe('ingest flow control', () => {
  it('sends nothing before a host welcomed the page, then sends within the credits, oldest first', () => {
    const { q, sent, seqs } = queue()
    void q.enqueue(encodeEvents(events('d1', 1, 30)))
    void q.enqueue(encodeEvents(events('d1', 31, 30)))
    void q.enqueue(encodeEvents(events('d1', 61, 30)))
    expect(sent).toHaveLength(0)
    q.connected(70)
    expect(seqs().map((s) => s[0])).toEqual([1, 31])
    expect([q.inFlight, q.queued]).toEqual([60, 30])
    q.durable(1, undefined, false)
    expect(seqs().map((s) => s[0])).toEqual([1, 31, 61])
    expect([q.inFlight, q.queued, q.pending]).toEqual([60, 0, 2])
  })

  it('says whether a batch waits on the page, and tells before each batch goes which is the oldest not sent yet', () => {
    const told: number[] = []
    const sent: number[] = []
    const q = new IngestQueue({ maxQueuedEvents: 1_000, send: (req) => sent.push(req), unsentFrom: (req) => told.push(req) })
    q.connected(40)
    expect(told).toEqual([Number.POSITIVE_INFINITY])
    void q.enqueue(encodeEvents(events('d1', 1, 30)))
    expect(q.waiting).toBe(false)
    void q.enqueue(encodeEvents(events('d1', 31, 30)))
    void q.enqueue(encodeEvents(events('d1', 61, 30)))
    expect({ waiting: q.waiting, sent, lastReq: q.lastReq }).toEqual({ waiting: true, sent: [1], lastReq: 3 })
    told.length = 0
    q.durable(1, undefined, false)
    // Batch 2 goes (told first), batch 3 waits for credits: the oldest not sent.
    expect({ told, sent }).toEqual({ told: [2, 3], sent: [1, 2] })
  })

  it('lets one batch larger than the whole window go, alone', () => {
    const { q, sent } = queue(10_000)
    q.connected(100)
    void q.enqueue(encodeEvents(events('d1', 1, 500)))
    void q.enqueue(encodeEvents(events('d1', 501, 1)))
    expect(sent.map((s) => batchSize(s.batch))).toEqual([500])
    q.durable(1, undefined, false)
    expect(sent.map((s) => batchSize(s.batch))).toEqual([500, 1])
  })

  it('refuses at once, with the reason, past maxQueuedEvents; never grows', async () => {
    const { q } = queue(100)
    const first = q.enqueue(encodeEvents(events('d1', 1, 60)))
    const second = q.enqueue(encodeEvents(events('d1', 61, 60)))
    const refused = await second.then(
      () => null,
      (error: unknown) => error,
    )
    expect(isOverflowError(refused)).toBe(true)
    expect((refused as Error).message).toBe(
      'worker ingest queue is full: 60 events wait on this page for the host and 60 more would pass maxQueuedEvents (100); await earlier ingests before sending more',
    )
    expect(q.queued).toBe(60)
    q.connected(1_000)
    q.receipt(1, counts(60))
    expect((await first).accepted).toBe(60)
  })

  it('resolves the receipt when applied and durable when committed', async () => {
    const { q } = queue()
    q.connected(1_000)
    const receipt = q.enqueue(encodeEvents(events('d1', 1, 2)))
    q.receipt(1, counts(2))
    const r = await receipt
    let durable = false
    void r.durable.then(() => {
      durable = true
    })
    await Promise.resolve()
    expect(durable).toBe(false)
    q.durable(1, undefined, false)
    await r.durable
    expect([r.accepted, q.pending]).toEqual([2, 0])
  })

  it('sends every batch not yet durable again to the next host, in the original order', () => {
    const { q, seqs } = queue()
    q.connected(1_000)
    for (let b = 0; b < 4; b++) void q.enqueue(encodeEvents(events('d1', 1 + b * 10, 10)))
    q.receipt(1, counts(10))
    q.durable(1, undefined, false)
    q.receipt(2, counts(10)) // applied, not yet durable when the host went away
    q.disconnected()
    void q.enqueue(encodeEvents(events('d1', 41, 10)))
    q.connected(1_000)
    expect(seqs().map((s) => s[0])).toEqual([1, 11, 21, 31, 11, 21, 31, 41])
  })

  it("holds a batch the host could not make durable because it lost the log, for the next host; rejects other failures", async () => {
    const { q, seqs } = queue()
    q.connected(1_000)
    const a = q.enqueue(encodeEvents(events('d1', 1, 5)))
    const b = q.enqueue(encodeEvents(events('d1', 6, 5)))
    q.receipt(1, counts(5))
    q.receipt(2, counts(5))
    const ra = await a
    const rb = await b
    q.durable(1, { name: 'FencedError', message: 'another writer claimed this log' }, true)
    q.durable(2, { name: 'QuotaError', message: 'storage quota exceeded' }, false)
    await expect(rb.durable).rejects.toThrow('storage quota exceeded')
    void q.enqueue(encodeEvents(events('d1', 11, 5)))
    expect(seqs().map((s) => s[0])).toEqual([1, 6])
    q.connected(1_000)
    expect(seqs().map((s) => s[0])).toEqual([1, 6, 1, 11])
    q.durable(1, undefined, false)
    await ra.durable
  })

  it('rejects everything pending on close, and every later batch', async () => {
    const { q } = queue()
    const pending = q.enqueue(encodeEvents(events('d1', 1, 5)))
    q.close(new Error('the remote engine is closed'))
    await expect(pending).rejects.toThrow('the remote engine is closed')
    await expect(q.enqueue(encodeEvents(events('d1', 6, 5)))).rejects.toThrow('the remote engine is closed')
    await q.drained()
  })

  it('fails a batch the host cannot be sent (its send throws) alone, with the reason; the batches after it still go and nothing stays pending', async () => {
    const sent: number[] = []
    const q = new IngestQueue({
      maxQueuedEvents: 1_000,
      send: (req) => {
        if (req === 1) throw new DOMException('#<Object> could not be cloned.', 'DataCloneError')
        sent.push(req)
      },
    })
    const first = q.enqueue(encodeEvents(events('d1', 1, 5)))
    const second = q.enqueue(encodeEvents(events('d1', 6, 5)))
    q.connected(1_000)
    await expect(first).rejects.toThrow('#<Object> could not be cloned.')
    expect(sent).toEqual([2])
    expect([q.inFlight, q.queued, q.pending]).toEqual([5, 0, 1])
    q.receipt(2, counts(5))
    q.durable(2, undefined, false)
    await (await second).durable
    await q.drained()
  })

  it('refuses at enqueue, with a TypeError naming the event, a batch the structured clone cannot copy', async () => {
    const { q, sent } = queue()
    q.connected(1_000)
    const fn = (() => 1) as unknown as number
    const refused = q.enqueue(encodeEvents([...events('d1', 1, 2), { id: 'd1#3', source: 'd1', seq: 3, ts: 3, value: fn }]))
    await expect(refused).rejects.toThrow(new TypeError("ingest: event 2 (id 'd1#3') cannot be sent to the engine's host: DataCloneError: () => 1 could not be cloned."))
    expect([sent.length, q.pending, q.queued, q.inFlight]).toEqual([0, 0, 0, 0])
  })
})
