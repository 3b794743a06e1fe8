import { describe, expect, it } from 'vitest'
import { boundedParallel } from '../boundedParallel.ts'

describe('boundedParallel', () => {
  it('keeps the input order and never runs more than the limit at once', async () => {
    let running = 0
    let most = 0
    const results = await boundedParallel([5, 1, 4, 2, 3], 2, async (n) => {
      running++
      most = Math.max(most, running)
      await Promise.resolve()
      running--
      return n * 10
    })
    expect(results).toEqual([50, 10, 40, 20, 30])
    expect(most).toBe(2)
  })

  it('starts no job after a failure and rejects with it', async () => {
    const started: number[] = []
    const run = boundedParallel([1, 2, 3, 4], 1, async (n) => {
      started.push(n)
      if (n === 2) throw new Error('job 2 failed')
      return n
    })
    await expect(run).rejects.toThrow('job 2 failed')
    expect(started).toEqual([1, 2])
  })

  it('refuses a limit that is not a positive integer', async () => {
    await expect(boundedParallel([1], 0, async (n) => n)).rejects.toThrow(RangeError)
  })
})
