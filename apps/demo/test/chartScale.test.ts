import { describe, expect, it } from 'vitest'
import { valueAxis } from '../src/ui/chartScale.ts'

describe('valueAxis', () => {
  it('ticks a count in whole numbers only: the devices chart never shows 5.5 devices', () => {
    expect(valueAxis([5, 6, 6, 6], 4, 1)).toEqual({ min: 4, max: 7, ticks: [4, 5, 6, 7], decimals: 0 })
    expect(valueAxis([6, 6], 4, 1).ticks).toEqual([5, 6, 7])
    // A measured value keeps fine ticks.
    expect(valueAxis([0.81, 0.96, 1.02])).toMatchObject({ ticks: [0.7, 0.8, 0.9, 1, 1.1], decimals: 1 })
  })
})
