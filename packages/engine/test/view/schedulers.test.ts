import { afterEach, describe, expect, it, vi } from 'vitest'
import { createFrameScheduler } from '../../src/view/frameScheduler.ts'
import { createManualScheduler } from '../../src/view/manualScheduler.ts'

afterEach(() => {
  vi.unstubAllGlobals()
})

describe('createManualScheduler', () => {
  it('coalesces many schedules of one task between frames into one run', () => {
    const scheduler = createManualScheduler()
    const task = vi.fn()
    for (let i = 0; i < 50; i++) scheduler.schedule(task)
    expect(task).not.toHaveBeenCalled()
    expect(scheduler.pending).toBe(1)
    scheduler.flush()
    expect(task).toHaveBeenCalledTimes(1)
    scheduler.flush()
    expect(task).toHaveBeenCalledTimes(1)
  })

  it('runs a task scheduled during a frame in the next frame, not the current one', () => {
    const scheduler = createManualScheduler()
    const second = vi.fn()
    scheduler.schedule(() => scheduler.schedule(second))
    scheduler.flush()
    expect(second).not.toHaveBeenCalled()
    scheduler.flush()
    expect(second).toHaveBeenCalledTimes(1)
  })

  it('cancels a waiting task, but a stale cancel leaves a later frame alone', () => {
    const scheduler = createManualScheduler()
    const task = vi.fn()
    const cancel = scheduler.schedule(task)
    cancel()
    scheduler.flush()
    expect(task).not.toHaveBeenCalled()

    const stale = scheduler.schedule(task)
    scheduler.flush()
    scheduler.schedule(task)
    stale()
    scheduler.flush()
    expect(task).toHaveBeenCalledTimes(2)
  })

  it('runs every task of a frame when one throws, then rethrows the first error', () => {
    const scheduler = createManualScheduler()
    const after = vi.fn()
    scheduler.schedule(() => {
      throw new Error('first')
    })
    scheduler.schedule(() => {
      throw new Error('second')
    })
    scheduler.schedule(after)
    expect(() => scheduler.flush()).toThrow('first')
    expect(after).toHaveBeenCalledTimes(1)
  })
})

describe('createFrameScheduler', () => {
  function fakeAnimationFrames() {
    const callbacks = new Map<number, FrameRequestCallback>()
    let next = 1
    const request = vi.fn((callback: FrameRequestCallback) => {
      callbacks.set(next, callback)
      return next++
    })
    const cancel = vi.fn((handle: number) => {
      callbacks.delete(handle)
    })
    vi.stubGlobal('requestAnimationFrame', request)
    vi.stubGlobal('cancelAnimationFrame', cancel)
    const runFrame = (): void => {
      const due = [...callbacks.values()]
      callbacks.clear()
      for (const callback of due) callback(0)
    }
    return { request, cancel, runFrame }
  }

  it('requests one animation frame for any number of schedules and runs each task once', () => {
    const frames = fakeAnimationFrames()
    const scheduler = createFrameScheduler()
    const a = vi.fn()
    const b = vi.fn()
    for (let i = 0; i < 50; i++) {
      scheduler.schedule(a)
      scheduler.schedule(b)
    }
    expect(frames.request).toHaveBeenCalledTimes(1)
    frames.runFrame()
    expect(a).toHaveBeenCalledTimes(1)
    expect(b).toHaveBeenCalledTimes(1)

    scheduler.schedule(a)
    expect(frames.request).toHaveBeenCalledTimes(2)
  })

  it('cancels the animation frame when its last task is cancelled', () => {
    const frames = fakeAnimationFrames()
    const scheduler = createFrameScheduler()
    const task = vi.fn()
    const cancel = scheduler.schedule(task)
    cancel()
    expect(frames.cancel).toHaveBeenCalledTimes(1)
    frames.runFrame()
    expect(task).not.toHaveBeenCalled()
  })

  it('falls back to a 16 ms timeout where there is no requestAnimationFrame', () => {
    vi.stubGlobal('requestAnimationFrame', undefined)
    const timeouts: { callback: () => void; ms: number | undefined }[] = []
    vi.stubGlobal('setTimeout', (callback: () => void, ms?: number) => timeouts.push({ callback, ms }))
    const scheduler = createFrameScheduler()
    const task = vi.fn()
    scheduler.schedule(task)
    scheduler.schedule(task)
    expect(timeouts.map((t) => t.ms)).toEqual([16])
    timeouts[0]?.callback()
    expect(task).toHaveBeenCalledTimes(1)
  })
})
