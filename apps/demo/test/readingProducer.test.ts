import { invalidReason, type StreamEvent } from '@tidemark/engine'
import { describe, expect, it } from 'vitest'
import { deviceOfSource, deviceSourceGrant, nextDeviceSource } from '../src/fleet/deviceSource.ts'
import { deliveryLatencyOf } from '../src/fleet/fleetAggregates.ts'
import { createDeviceProfile, DEFAULT_FAULTS, ReadingProducer } from '../src/fleet/readingProducer.ts'

const T0 = 1_800_000_000_000

/** Polls a producer every `stepMs` for `durationMs` of fake time; returns every upload. */
function run(producer: ReadingProducer, from: number, durationMs: number, stepMs = 100): StreamEvent[][] {
  const uploads: StreamEvent[][] = []
  for (let t = from; t <= from + durationMs; t += stepMs) {
    const upload = producer.poll(t)
    if (upload !== null) uploads.push(upload)
  }
  return uploads
}

function makeProducer(seed: number, faults = DEFAULT_FAULTS): ReadingProducer {
  const { profile, rng } = createDeviceProfile(2, seed, T0)
  return new ReadingProducer(profile, faults, rng, T0)
}

describe('ReadingProducer', () => {
  it('stamps a gap-free seq with timestamps that never go backwards, skewed by the device clock', () => {
    const producer = makeProducer(1)
    const readings = new Map<number, StreamEvent>()
    for (const upload of run(producer, T0, 60_000)) {
      for (const event of upload) if (event.seq !== undefined) readings.set(event.seq, event)
    }
    const uploaded = producer.seq - producer.buffered
    expect(readings.size).toBe(uploaded)
    expect(uploaded).toBeGreaterThan(300)
    let previousTs = Number.NEGATIVE_INFINITY
    for (let seq = 1; seq <= uploaded; seq++) {
      const event = readings.get(seq)
      expect(event, `seq ${seq}`).toBeDefined()
      expect((event as StreamEvent).ts).toBeGreaterThanOrEqual(previousTs)
      previousTs = (event as StreamEvent).ts
    }
    const { skewMs, sampleEveryMs } = producer.profile
    const first = readings.get(1) as StreamEvent
    expect(Math.abs(first.ts - (T0 + skewMs))).toBeLessThan(sampleEveryMs / 2)
  })

  it('stamps each reading with the time its upload handed it over, on the device clock: its delivery latency', () => {
    const producer = makeProducer(6, { ...DEFAULT_FAULTS, duplicateRate: 0.5 })
    const first = new Map<number, StreamEvent>()
    const latencies: number[] = []
    for (let t = T0; t <= T0 + 30_000; t += 100) {
      const upload = producer.poll(t) ?? []
      for (const event of upload) {
        if (event.seq === undefined) continue
        const seen = first.get(event.seq)
        // A re-sent reading is the one sent before, stamp included.
        if (seen !== undefined) expect(event).toEqual(seen)
        else {
          first.set(event.seq, event)
          expect(event.id).toBe(`${producer.profile.id}-${event.seq}@${t + producer.profile.skewMs}`)
          latencies.push(deliveryLatencyOf(event))
        }
      }
    }
    const { uploadEveryMs } = producer.profile
    // Sampled every 500 ms, uploaded about every second (±20%): from a sample's jitter below zero up to an upload period and a poll step.
    expect(Math.min(...latencies)).toBeGreaterThanOrEqual(-DEFAULT_FAULTS.jitterMs)
    expect(Math.max(...latencies)).toBeLessThanOrEqual(1.2 * uploadEveryMs + 100 + DEFAULT_FAULTS.jitterMs)
    expect(deliveryLatencyOf({ id: 'd01-1', source: 'd01', ts: T0, value: 1 })).toBeNaN()
  })

  it('re-sends readings it already sent (same source and seq) at about the duplicate rate', () => {
    const producer = makeProducer(2, { ...DEFAULT_FAULTS, duplicateRate: 0.5 })
    const seen = new Set<number>()
    let repeats = 0
    for (const upload of run(producer, T0, 60_000)) {
      for (const event of upload) {
        if (event.seq === undefined) continue
        if (seen.has(event.seq)) repeats++
        seen.add(event.seq)
      }
    }
    expect(repeats).toBeGreaterThan(20)
  })

  it('sends malformed records that the engine rejects, without seq, so they never open a gap', () => {
    const producer = makeProducer(3, { ...DEFAULT_FAULTS, invalidRate: 1 })
    const uploads = run(producer, T0, 20_000)
    const malformed = uploads.flat().filter((event) => invalidReason(event) !== null)
    expect(malformed.length).toBe(uploads.length)
    for (const event of malformed) expect(event.seq).toBeUndefined()
    const reasons = new Set(malformed.map((event) => invalidReason(event)))
    expect(reasons.size).toBeGreaterThan(1)
  })

  it('is reproducible from its seed', () => {
    const a = run(makeProducer(4), T0, 10_000)
    const b = run(makeProducer(4), T0, 10_000)
    expect(a).toEqual(b)
  })

  it('does not catch up on the time it was paused', () => {
    const producer = makeProducer(5)
    run(producer, T0, 5_000)
    const seqBefore = producer.seq
    producer.resume(T0 + 65_000)
    const upload = run(producer, T0 + 65_000, 2_000).flat()
    const readings = upload.filter((event) => event.seq !== undefined && event.seq > seqBefore)
    // About 2 s of samples (3 metrics every 500 ms), not 62 s of them; some of them already uploaded.
    expect(producer.seq - seqBefore).toBeGreaterThan(0)
    expect(producer.seq - seqBefore).toBeLessThanOrEqual(3 * 5)
    expect(readings.length).toBeGreaterThan(0)
    for (const event of readings) expect(event.ts).toBeGreaterThan(T0 + 60_000)
  })

  it('flush hands out everything sampled, due or not, without faults; paused, it samples nothing new', () => {
    const producer = makeProducer(4, { jitterMs: 120, duplicateRate: 1, invalidRate: 1 })
    // Sampled at T0 and T0 + 500; whether an upload was due by then or not, flush takes what is left.
    const polled = run(producer, T0, 500).flat()
    const flushed = producer.flush(T0 + 500) ?? []
    expect(producer.buffered).toBe(0)
    expect(flushed.length).toBeGreaterThan(0)
    expect(flushed.every((event) => invalidReason(event) === null)).toBe(true)
    const seqs = [...polled, ...flushed].flatMap((event) => (event.seq === undefined ? [] : [event.seq]))
    expect(new Set(seqs)).toEqual(new Set([1, 2, 3, 4, 5, 6]))
    expect(flushed.map((event) => event.seq)).toEqual([...new Set(flushed.map((event) => event.seq))])
    // Paused: nothing new is sampled, and nothing is left to hand out.
    expect(producer.flush(T0 + 600, true)).toBeNull()
    expect(producer.seq).toBe(6)
    expect(producer.flush(T0 + 1_000)?.map((event) => event.seq)).toEqual([7, 8, 9])
  })
})

describe('a device that left the fleet and runs again', () => {
  const clock = (source: string, prefix: number, finished: boolean) => ({ source, writer: 'r1', maxTs: 9, prefix, prefixTs: 9, provable: true, version: 1, ...(finished ? { finished } : {}) })

  it('writes its id first, continues its latest source until that finished, then writes the next one from seq 1', () => {
    expect(nextDeviceSource([], 'd03')).toEqual({ source: 'd03', lastSeq: 0 })
    expect(nextDeviceSource([clock('d03', 42, false)], 'd03')).toEqual({ source: 'd03', lastSeq: 42 })
    expect(nextDeviceSource([clock('d03', 42, true)], 'd03')).toEqual({ source: 'd03~2', lastSeq: 0 })
    expect(nextDeviceSource([clock('d03', 42, true), clock('d03~2', 7, false)], 'd03')).toEqual({ source: 'd03~2', lastSeq: 7 })
    expect(nextDeviceSource([clock('d03~2', 7, true), clock('d03', 42, true)], 'd03')).toEqual({ source: 'd03~3', lastSeq: 0 })
    // Another device's sources, and names that are no run of it, are not its own.
    expect(nextDeviceSource([clock('d30', 5, true), clock('d03~x', 5, true)], 'd03')).toEqual({ source: 'd03', lastSeq: 0 })
  })

  it('counts as the same device, and its token grants every run of it', () => {
    expect(deviceOfSource('d03~2')).toBe('d03')
    expect(deviceOfSource('d03')).toBe('d03')
    expect(deviceSourceGrant('d03')).toEqual(['d03', 'd03~*'])
    const { profile, rng } = createDeviceProfile(2, 1, T0)
    const readings = run(new ReadingProducer(profile, DEFAULT_FAULTS, rng, T0, 0, 'd03~2'), T0, 3_000).flat()
    expect(readings.length).toBeGreaterThan(0)
    expect(readings.every((event) => event.source === 'd03~2' && event.id.startsWith('d03~2-'))).toBe(true)
  })
})
