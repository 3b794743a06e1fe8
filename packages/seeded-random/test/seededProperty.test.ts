/**
 * `assertSeeded`: a failure names the seed, a repro command and the shrunk counterexample, found
 * again from the failing case; a property that holds runs all its cases.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { assertSeeded } from '../src/seededProperty.ts'

describe('assertSeeded', () => {
  it('reports the shrunk counterexample of a failure', () => {
    expect(() => assertSeeded(fc.property(fc.integer(), (x) => x < 1000), 'packages/seeded-random/test/seededProperty.test.ts', 'shrinks', 200)).toThrow(/Counterexample: \[1000\]/)
  })

  it('passes a property that holds', () => {
    let cases = 0
    assertSeeded(fc.property(fc.integer(), () => ++cases > 0), 'packages/seeded-random/test/seededProperty.test.ts', 'holds', 100)
    expect(cases).toBe(100)
  })
})
