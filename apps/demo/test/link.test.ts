import { createEngine, type IngestReceipt, type StreamEvent, tumbling } from '@tidemark/engine'
import { describe, expect, it } from 'vitest'
import { DeviceLink, type LinkTarget } from '../src/fleet/link.ts'

const T0 = 1_800_000_000_000

function reading(seq: number): StreamEvent {
  return { id: `d1-${seq}`, source: 'd1', seq, ts: T0 + seq * 100, key: 'temp', value: 20 + seq }
}

/** A target that records what it was given. */
function recordingTarget(): LinkTarget & { readonly batches: (readonly StreamEvent[])[] } {
  const batches: (readonly StreamEvent[])[] = []
  return {
    batches,
    ingest(events): IngestReceipt {
      batches.push(events)
      return { accepted: events.length, late: 0, duplicates: 0, beyondLateness: 0, rejected: 0, anomalies: [], durable: Promise.resolve() }
    },
  }
}

describe('DeviceLink', () => {
  it('delivers a batch after its network delay, not before, and records the sync time', () => {
    const target = recordingTarget()
    const link = new DeviceLink('d1', target, () => 200)
    link.send([reading(1), reading(2)], T0)
    expect(link.deliverDue(T0 + 199)).toEqual([])
    expect(link.status()).toMatchObject({ inFlight: 2, lastSync: null })
    const [delivery] = link.deliverDue(T0 + 200)
    expect(delivery).toMatchObject({ source: 'd1', events: 2, backlog: false })
    expect(target.batches).toEqual([[reading(1), reading(2)]])
    expect(link.status()).toMatchObject({ inFlight: 0, lastSync: T0 + 200, delivered: 2 })
  })

  it('queues while offline and sends the whole queue as one backlog upload on reconnect', () => {
    const target = recordingTarget()
    const link = new DeviceLink('d1', target, () => 50)
    link.setOnline(false, T0)
    link.send([reading(1)], T0 + 100)
    link.send([reading(2), reading(3)], T0 + 200)
    expect(link.deliverDue(T0 + 10_000)).toEqual([])
    expect(link.status()).toMatchObject({ online: false, queued: 3 })
    link.setOnline(true, T0 + 10_000)
    const deliveries = link.deliverDue(T0 + 10_050)
    expect(deliveries).toHaveLength(1)
    expect(deliveries[0]).toMatchObject({ backlog: true, events: 3 })
    expect(target.batches).toEqual([[reading(1), reading(2), reading(3)]])
    expect(link.status().queued).toBe(0)
  })

  it('puts uploads still in flight back in the queue when the link drops: nothing lost, nothing sent twice', () => {
    const target = recordingTarget()
    const link = new DeviceLink('d1', target, () => 1_000)
    link.send([reading(1)], T0)
    link.setOnline(false, T0 + 500)
    expect(link.status()).toMatchObject({ queued: 1, inFlight: 0 })
    link.setOnline(true, T0 + 600)
    link.deliverDue(T0 + 5_000)
    expect(target.batches.flat()).toEqual([reading(1)])
  })

  it('loses its queue in a crash and says how much', () => {
    const link = new DeviceLink('d1', recordingTarget(), () => 10)
    link.setOnline(false, T0)
    link.send([reading(1), reading(2)], T0)
    expect(link.dropQueue()).toBe(2)
    expect(link.status().queued).toBe(0)
  })

  it('lands a reconnecting backlog in a real engine as corrections and late-lane entries', () => {
    const engine = createEngine({ windows: tumbling(1_000), allowedLateness: 2_000 })
    const online = new DeviceLink('d2', engine, () => 0)
    const offline = new DeviceLink('d1', engine, () => 0)
    offline.setOnline(false, T0)
    for (let s = 1; s <= 60; s++) {
      offline.send([reading(s)], T0 + s * 100)
      online.send([{ ...reading(s), id: `d2-${s}`, source: 'd2' }], T0 + s * 100)
      online.deliverDue(T0 + s * 100)
    }
    offline.setOnline(true, T0 + 6_100)
    const [delivery] = offline.deliverDue(T0 + 6_100)
    const receipt = delivery?.receipt
    expect(receipt?.accepted).toBe(60 - (receipt?.beyondLateness ?? 0))
    expect(receipt?.late).toBeGreaterThan(0)
    expect(receipt?.beyondLateness).toBeGreaterThan(0)
    expect(engine.lateEvents().length).toBe(receipt?.beyondLateness)
  })
})
