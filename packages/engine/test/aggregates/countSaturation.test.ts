/**
 * Bucket counts near 2^53. A window's states add up its cells' (each cell up to 2^40 events, so
 * 2^13 full cells pass 2^53), decode accepts each count up to 2^53 − 1, and a float sum past 2^53
 * rounds: adding 1 three times would then differ from adding 3, and replicas holding the same
 * cells would show different counts depending on the order cells and events came. Counts
 * saturate at 2^53 − 1 instead, which every order gives.
 */
import { describe, expect, it } from 'vitest'
import { createEngine, groupCellEntries, histogram, manual, quantiles, type TidemarkEngine, tumbling } from '@tidemark/engine'
import { addBucketCounts, MAX_BUCKET_COUNT } from '../../src/aggregates/bucketCount.ts'
import { ByteWriter } from '../../src/aggregates/byteWriter.ts'
import { MAX_CELL_COUNT } from '../../src/lattice/cellGroup.ts'

const MAX = Number.MAX_SAFE_INTEGER

describe('addBucketCounts', () => {
  it('adds exactly below 2^53 − 1 and stays there past it, whatever the order', () => {
    expect(MAX_BUCKET_COUNT).toBe(MAX)
    expect(addBucketCounts(2, 3)).toBe(5)
    expect(addBucketCounts(MAX - 1, 1)).toBe(MAX)
    expect(addBucketCounts(MAX, MAX)).toBe(MAX)
    const ones = addBucketCounts(addBucketCounts(addBucketCounts(MAX - 1, 1), 1), 1)
    expect(ones).toBe(addBucketCounts(MAX - 1, 3))
  })
})

describe('histogram counts near 2^53', () => {
  const spreadOf = { spread: histogram({ bounds: [10] }) }

  /** Peers' groups of 2^13 cells, each of 2^40 events in the first bucket: together 2^53, past 2^53 − 1. */
  function peerGroups() {
    const w = new ByteWriter()
    w.byte(0x48)
    w.varint(2)
    w.varint(MAX_CELL_COUNT)
    w.varint(0)
    const bytes = w.finish()
    expect(spreadOf.spread.result(spreadOf.spread.decode(bytes))).toEqual([MAX_CELL_COUNT, 0])
    const cell = { count: MAX_CELL_COUNT, sum: 5 * MAX_CELL_COUNT, min: 5, max: 5, maxTs: 1, version: 1 }
    const cells = Array.from({ length: 2 ** 13 }, (_, i) => ({ address: { window: 'tumbling:100', key: '', start: 0, source: `p${i}` }, cell, aggregates: [bytes] }))
    return { groups: groupCellEntries(cells), clocks: [] }
  }

  const local = [1, 2, 3].map((i) => ({ id: `m-${i}`, source: 'm', seq: i, ts: 10 + i, value: 5 }))

  function shown(order: 'peer first' | 'local first'): unknown[] {
    const engine = createEngine({ windows: tumbling(100), watermark: manual(), aggregates: spreadOf, replicaId: 'me' }) as TidemarkEngine<typeof spreadOf>
    const { groups, clocks } = peerGroups()
    if (order === 'peer first') expect(engine.replica.mergeRemoteGroups(groups, clocks).applied).toBe(groups.length)
    for (const event of local) engine.ingest([event])
    if (order === 'local first') expect(engine.replica.mergeRemoteGroups(groups, clocks).applied).toBe(groups.length)
    return engine.results().map((r) => r.aggregates.spread)
  }

  it('two replicas holding the same cells show the same histogram whatever the order cells and events came', () => {
    expect(shown('peer first')).toEqual([[MAX, 0]])
    expect(shown('local first')).toEqual([[MAX, 0]])
  })

  it('a state whose counts together pass 2^53 decodes, and encodes to the same bytes', () => {
    const spread = spreadOf.spread
    const full = spread.merge(spread.decode(spread.encode([MAX, 0])), spread.decode(spread.encode([0, MAX])))
    expect(full).toEqual([MAX, MAX])
    expect(spread.encode(spread.decode(spread.encode(full)))).toEqual(spread.encode(full))
  })
})

describe('quantiles counts near 2^53', () => {
  const sketch = quantiles({ at: [0.5] })
  /** A state of `n` zeros and nothing else (minimum and maximum 0). */
  const zeros = (n: number) => {
    const w = new ByteWriter()
    w.byte(0x51)
    w.varint(n)
    w.varint(0)
    w.varint(0)
    w.float64(0)
    w.float64(0)
    return sketch.decode(w.finish())
  }

  it('merge stays associative on states decode accepts', () => {
    const [a, b, c] = [zeros(MAX), zeros(2), zeros(1)]
    const left = sketch.encode(sketch.merge(sketch.merge(a, b), c))
    const right = sketch.encode(sketch.merge(a, sketch.merge(b, c)))
    expect(left).toEqual(right)
    expect(left).toEqual(sketch.encode(zeros(MAX)))
    const into = sketch.mergeInto?.(zeros(3), zeros(MAX))
    expect(into === undefined ? null : sketch.encode(into)).toEqual(left)
  })

  it('bucket counts saturate too, in adds and in merges', () => {
    const w = new ByteWriter()
    w.byte(0x51)
    w.varint(0)
    w.varint(0)
    w.varint(1)
    w.signed(0)
    w.varint(MAX)
    w.float64(1)
    w.float64(1)
    const ones = sketch.decode(w.finish())
    const added = sketch.add(sketch.decode(sketch.encode(ones)), 1, { id: 'e', source: 's', ts: 0, value: 1 })
    expect(sketch.encode(added)).toEqual(sketch.encode(ones))
    expect(sketch.encode(sketch.merge(ones, ones))).toEqual(sketch.encode(ones))
  })
})
