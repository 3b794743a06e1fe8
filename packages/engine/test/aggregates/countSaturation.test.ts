/**
 * Bucket counts near 2^53. A peer's state may hold a count up to 2^53 − 1 (decode accepts each
 * count up to there), and a float sum past 2^53 rounds: adding 1 three times would then differ
 * from adding 3, and replicas holding the same cells would show different counts depending on the
 * order cells and events came. Counts saturate at 2^53 − 1 instead, which every order gives.
 */
import { describe, expect, it } from 'vitest'
import { createEngine, groupCellEntries, histogram, manual, quantiles, type TidemarkEngine, tumbling } from '@tidemark/engine'
import { addBucketCounts, MAX_BUCKET_COUNT } from '../../src/aggregates/bucketCount.ts'
import { ByteWriter } from '../../src/aggregates/byteWriter.ts'

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

  /** A peer's groups whose one cell's histogram holds 2^53 − 1 values in the first bucket. */
  function peerGroups() {
    const peer = createEngine({ windows: tumbling(100), watermark: manual(), aggregates: spreadOf, replicaId: 'peer' }) as TidemarkEngine<typeof spreadOf>
    peer.ingest([{ id: 'p-1', source: 'p', seq: 1, ts: 1, value: 5 }])
    const { cells, clocks } = peer.replica.exportState()
    const w = new ByteWriter()
    w.byte(0x48)
    w.varint(2)
    w.varint(MAX)
    w.varint(0)
    const bytes = w.finish()
    expect(spreadOf.spread.result(spreadOf.spread.decode(bytes))).toEqual([MAX, 0])
    return { groups: groupCellEntries(cells.map((c) => ({ ...c, aggregates: [bytes] }))), clocks }
  }

  const local = [1, 2, 3].map((i) => ({ id: `m-${i}`, source: 'm', seq: i, ts: 10 + i, value: 5 }))

  function shown(order: 'peer first' | 'local first'): unknown[] {
    const engine = createEngine({ windows: tumbling(100), watermark: manual(), aggregates: spreadOf, replicaId: 'me' }) as TidemarkEngine<typeof spreadOf>
    const { groups, clocks } = peerGroups()
    if (order === 'peer first') engine.replica.mergeRemoteGroups(groups, clocks)
    for (const event of local) engine.ingest([event])
    if (order === 'local first') engine.replica.mergeRemoteGroups(groups, clocks)
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
