import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { boundedOutOfOrderness, createEngine, type StreamEvent, tumbling } from '@tidemark/engine'
import { bindDoc, readClockEntry, writeClockEntry } from '../src/index.ts'

/** One reading per second of `source`, seqs 1..count. */
function seconds(source: string, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${source}-${i + 1}`, source, seq: i + 1, ts: i * 1_000, value: 1 }))
}

const options = { windows: tumbling(10_000), watermark: boundedOutOfOrderness(1_000) }

describe('a finished source through a Yjs doc', () => {
  it('reaches a dashboard bound to a synced doc, which then fires without waiting for it, proven', () => {
    const phone = createEngine({ ...options, replicaId: 'phone' })
    const tablet = createEngine({ ...options, replicaId: 'tablet' })
    const dashboard = createEngine({ ...options, replicaId: 'dash' })
    const docs = [new Y.Doc(), new Y.Doc(), new Y.Doc()]
    // Every update of one doc reaches the others, as a relay would bring it.
    for (const from of docs) {
      from.on('update', (update: Uint8Array, origin: unknown) => {
        if (origin === 'wire') return
        for (const to of docs) if (to !== from) Y.applyUpdate(to, update, 'wire')
      })
    }
    for (const [i, engine] of [phone, tablet, dashboard].entries()) bindDoc(engine, docs[i] as Y.Doc)
    phone.ingest(seconds('d2', 5))
    tablet.ingest(seconds('d1', 35))
    expect(dashboard.results().filter((r) => r.status === 'on_time')).toEqual([])

    void phone.finishSource('d2')
    expect(dashboard.stats().proofFrontier).toBe(34_000)
    expect(dashboard.results().map((r) => [r.start, r.status, r.basis])).toEqual([
      [0, 'on_time', 'proven'],
      [10_000, 'on_time', 'proven'],
      [20_000, 'on_time', 'proven'],
      [30_000, 'provisional', 'unknown'],
    ])
    // A dashboard that joins later reads the finished clock from the doc alone.
    const late = createEngine({ ...options, replicaId: 'late' })
    const joined = new Y.Doc()
    Y.applyUpdate(joined, Y.encodeStateAsUpdate(docs[2] as Y.Doc))
    bindDoc(late, joined)
    expect(late.stats().proofFrontier).toBe(34_000)
  })

  it('keeps finished in the clock entry; an entry of an earlier writer reads as not finished', () => {
    const clock = { source: 'd1', writer: 'phone', maxTs: 9_000, prefix: 10, prefixTs: 9_000, provable: true, version: 11 }
    expect(readClockEntry(writeClockEntry({ ...clock, finished: true }))).toEqual({ ...clock, finished: true })
    expect(readClockEntry(writeClockEntry(clock))).toEqual(clock)
    expect(readClockEntry(['k', 'd1', 'phone', 9_000, 10, 9_000, 1, 11])).toEqual(clock)
  })
})
