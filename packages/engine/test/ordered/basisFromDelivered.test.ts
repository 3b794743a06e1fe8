/**
 * An ordered event's basis (docs/semantics.md, basis of an event) is judged when it is flushed,
 * from what its source had delivered by then, not from the order it arrived in: `proven` while
 * its source's seq is gap-free up to it and ts never decreased along that prefix, `fallback` once
 * ts went backwards along seq at or before it (also after an event without seq). For events
 * with seq, the stream gives what `orderEvents` gives for the same events, whatever their
 * arrival order and however they were cut into pushes.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { assertFreshSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import type { StreamEvent } from '../../src/input/event.ts'
import { orderEvents } from '../../src/ordered/orderEvents.ts'
import type { OrderedEvent } from '../../src/ordered/eventOrder.ts'
import { ev, flat, manualStream } from './streamHelpers.ts'

const FILE = 'packages/engine/test/ordered/basisFromDelivered.test.ts'

const basisById = (events: readonly OrderedEvent[]) => Object.fromEntries(events.map((e) => [e.id, e.basis]))

/** The basis of every event once all of `pushes` went in, flushed at once. */
function streamBasis(pushes: readonly StreamEvent[][]): Record<string, string> {
  const { stream } = manualStream()
  for (const events of pushes) stream.push(events)
  stream.advanceWatermark(1_000_000)
  return basisById(flat(stream.flushReady()))
}

describe('ordered stream basis: judged from what was delivered, not in what order', () => {
  // Source d delivers seq1@100, seq2@120, seq3@50: ts decreases only at seq 3.
  const delivered = [ev('d', 1, 100), ev('d', 2, 120), ev('d', 3, 50)]

  it('orderEvents: seq 2 is proven, seq 3 fallback', () => {
    expect(basisById(orderEvents(delivered).ordered)).toEqual({ 'd-1': 'proven', 'd-2': 'proven', 'd-3': 'fallback' })
  })

  it('the stream, whether seq 3 arrived before seq 2 or after it', () => {
    expect(streamBasis([[ev('d', 1, 100), ev('d', 2, 120), ev('d', 3, 50)]])).toEqual({ 'd-1': 'proven', 'd-2': 'proven', 'd-3': 'fallback' })
    expect(streamBasis([[ev('d', 1, 100), ev('d', 3, 50), ev('d', 2, 120)]])).toEqual({ 'd-1': 'proven', 'd-2': 'proven', 'd-3': 'fallback' })
    expect(streamBasis([[ev('d', 3, 50)], [ev('d', 2, 120)], [ev('d', 1, 100)]])).toEqual({ 'd-1': 'proven', 'd-2': 'proven', 'd-3': 'fallback' })
  })

  it('ts going backwards along seq after an event without seq is fallback, not derived', () => {
    const events = [ev('d', 1, 100), ev('d', undefined, 150, 'd-x'), ev('d', 2, 50)]
    expect(basisById(orderEvents(events).ordered)['d-2']).toBe('fallback')
    expect(streamBasis([events])).toEqual({ 'd-1': 'proven', 'd-x': 'derived', 'd-2': 'fallback' })
  })

  it('seqs after an event without seq, with ts never going back, stay derived', () => {
    expect(streamBasis([[ev('d', 1, 100), ev('d', undefined, 150, 'd-x'), ev('d', 2, 160)]])).toEqual({ 'd-1': 'proven', 'd-x': 'derived', 'd-2': 'derived' })
  })

  it('a seq above a gap below the prefix: fallback above the prefix, whatever fills the gap', () => {
    expect(streamBasis([[ev('d', 1, 100), ev('d', 3, 50)]])).toEqual({ 'd-1': 'proven', 'd-3': 'fallback' })
    expect(streamBasis([[ev('d', 1, 100), ev('d', 3, 150)]])).toEqual({ 'd-1': 'proven', 'd-3': 'unknown' })
  })

  it('with seqs (gaps, ts going back, ties) in any arrival order and any cut into pushes, the stream agrees with orderEvents', () => {
    const source = fc.record({
      name: fc.constantFrom('a', 'b', 'c'),
      // ts per seq 1..n (small range: ties and regressions happen); a missing seq is a gap.
      ts: fc.array(fc.integer({ min: 0, max: 12 }), { minLength: 1, maxLength: 12 }),
      missing: fc.array(fc.nat({ max: 11 }), { maxLength: 3 }),
      // Events without seq, delivered after every seq of their source (orderEvents counts them last too).
      seqless: fc.array(fc.integer({ min: 0, max: 12 }), { maxLength: 2 }),
    })
    assertFreshSeeded(
      fc.property(fc.uniqueArray(source, { selector: (s) => s.name, minLength: 1, maxLength: 3 }), fc.infiniteStream(fc.nat()), (sources, picks) => {
        const withSeq: StreamEvent[] = []
        const after: StreamEvent[] = []
        for (const s of sources) {
          s.ts.forEach((ts, i) => {
            if (!s.missing.includes(i)) withSeq.push(ev(s.name, i + 1, ts))
          })
          after.push(...s.seqless.map((ts, i) => ev(s.name, undefined, ts, `${s.name}-x${i}`)))
        }
        // A random arrival order, cut into pushes at random.
        const it = picks[Symbol.iterator]()
        const next = () => it.next().value as number
        const order = withSeq.map((e) => [next(), e] as const).sort((x, y) => x[0] - y[0]).map(([, e]) => e)
        const pushes: StreamEvent[][] = [[]]
        for (const e of order) {
          if (next() % 3 === 0) pushes.push([])
          ;(pushes.at(-1) as StreamEvent[]).push(e)
        }
        pushes.push(after)
        const reference = basisById(orderEvents([...withSeq, ...after]).ordered)
        const stream = streamBasis(pushes)
        // Above a gap that never filled, the stream may say `unknown` where orderEvents says
        // `fallback` (both rows hold for such a seq): the stream's clock compares a seq above a
        // gap with the prefix once, when it arrives, and orderEvents delivers the prefix first.
        for (const [id, basis] of Object.entries(stream)) if (basis === 'unknown' && reference[id] === 'fallback') stream[id] = 'fallback'
        expect(stream).toEqual(reference)
      }),
      FILE,
      300,
    )
  }, PROPERTY_TIMEOUT)
})
