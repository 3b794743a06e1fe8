import { seededRandom } from '@tidemark/seeded-random'
import { describe, expect, it } from 'vitest'
import { histogram } from '@tidemark/engine'
import { bytesOf, mergedState, shuffled, stateOf } from './aggregateEvents.ts'

describe('histogram', () => {
  const spread = histogram({ bounds: [10, 50, 100] })

  it('counts v in bucket i when bounds[i − 1] < v ≤ bounds[i], above every bound in the last', () => {
    expect(spread.result(spread.init())).toEqual([0, 0, 0, 0])
    expect(spread.result(stateOf(spread, [-1e300, 10, 10.000001, 50, 99, 100, 100.5, 1e300]))).toEqual([2, 2, 2, 2])
  })

  it('gives the same bytes for any delivery order and merge tree, and round-trips', () => {
    const random = seededRandom(11)
    const values = Array.from({ length: 500 }, () => random() * 150)
    const reference = spread.encode(stateOf(spread, values))
    expect(spread.encode(mergedState(spread, shuffled(values, random), [7, 99, 230, 400], [3, 1, 4, 1, 5]))).toEqual(reference)
    expect(spread.encode(spread.decode(reference))).toEqual(reference)
    expect(spread.idempotent).toBe(false)
  })

  it('returns a copy: changing a result does not change the state', () => {
    const state = stateOf(spread, [5])
    const shown = spread.result(state)
    shown[0] = 99
    expect(spread.result(state)).toEqual([1, 0, 0, 0])
  })

  it.each([
    ['a wrong format byte', bytesOf('49 04 00 00 00 00'), /format byte 0x49 is not 0x48/],
    ['the wrong number of buckets', bytesOf('48 03 00 00 00'), /3 buckets, expected 4/],
    ['more buckets than configured', bytesOf('48 05'), /bucket count 5 exceeds 4/],
    ['a truncated state', bytesOf('48 04 00 00'), /truncated/],
    ['a count of 2^53', bytesOf('48 04 8080808080808010 00 00 00'), /count .*exceeds/],
    ['trailing bytes', bytesOf('48 04 00 00 00 00 00'), /trailing/],
  ])('rejects %s with a RangeError naming the problem', (_name, bytes, message) => {
    expect(() => spread.decode(bytes)).toThrow(RangeError)
    expect(() => spread.decode(bytes)).toThrow(message)
  })

  it.each([
    [{ bounds: [] }, /bounds must list 1 to 1024 finite, strictly increasing numbers, got 0 item\(s\): \[\]/],
    [{ bounds: [5, 5] }, /strictly increasing/],
    [{ bounds: [1, Number.NaN] }, /strictly increasing/],
    [{ bounds: [1], bins: 3 }, /unknown option 'bins'/],
    [undefined, /expected an options object, got undefined/],
  ])('refuses %j', (options, message) => {
    expect(() => histogram(options as never)).toThrow(message)
  })

  it('takes 1 to 1024 bounds', () => {
    const bounds = (n: number) => Array.from({ length: n }, (_, i) => i)
    expect(histogram({ bounds: [0] }).result(histogram({ bounds: [0] }).init())).toEqual([0, 0])
    expect(histogram({ bounds: bounds(1024) }).init()).toHaveLength(1025)
    expect(() => histogram({ bounds: bounds(1025) })).toThrow(/bounds must list 1 to 1024 finite, strictly increasing numbers, got 1025 item\(s\)/)
  })

  it('fingerprints its bounds', () => {
    expect(spread.configuration).toBe('histogram(bounds=10,50,100)')
    expect(histogram({ bounds: [0.1, 1e21] }).configuration).toBe('histogram(bounds=0.1,1e+21)')
  })
})
