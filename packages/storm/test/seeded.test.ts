import { seededRandom } from '@tidemark/seeded-random'
import { assertSeeded, PROPERTY_TIMEOUT } from '@tidemark/seeded-random/property'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { seeded, stormSeed } from '../src/driver/seeded.ts'

const FILE = 'packages/storm/test/seeded.test.ts'

describe('seeded', () => {
  it("draws exactly @tidemark/seeded-random's sequence, for any seed", () => {
    assertSeeded(
      fc.property(fc.integer({ min: -(2 ** 33), max: 2 ** 33 }), (seed) => {
        const ours = seeded(seed)
        const theirs = seededRandom(seed)
        for (let k = 0; k < 64; k++) expect(ours()).toBe(theirs())
      }),
      FILE,
      "draws exactly @tidemark/seeded-random's sequence, for any seed",
      300,
    )
  }, PROPERTY_TIMEOUT)

  it('draws the pinned sequence of seed 42', () => {
    const random = seeded(42)
    expect([random(), random()]).toEqual([0.6011037519201636, 0.44829055899754167])
  })
})

describe('stormSeed', () => {
  it('replays STORM_SEED', () => {
    expect(stormSeed({ STORM_SEED: '708397302' })).toBe(708_397_302)
  })

  it('draws a fresh positive seed when STORM_SEED is unset or empty', () => {
    expect(stormSeed({}, () => 0)).toBe(1)
    expect(stormSeed({ STORM_SEED: '' }, () => 0.5)).toBe(2 ** 30 + 1)
  })

  it('refuses a STORM_SEED that is not a positive integer, naming it', () => {
    expect(() => stormSeed({ STORM_SEED: 'abc' })).toThrow('STORM_SEED must be a positive integer, got "abc"')
    expect(() => stormSeed({ STORM_SEED: '-3' })).toThrow(/got "-3"/)
    expect(() => stormSeed({ STORM_SEED: '1.5' })).toThrow(/got "1.5"/)
  })
})
