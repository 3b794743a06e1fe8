import { createManualScheduler, EngineFeed, EngineObserver, windowSlice } from '@tidemark/engine'
import { FakeEngine } from '@tidemark/engine/testing'
import { describe, expect, it } from 'vitest'
import { MINUTE } from './windowIds.ts'

describe('an observer with two listeners, the first of which throws', () => {
  it('tells the second one of the frame too, and rethrows the first error', () => {
    const engine = new FakeEngine()
    const scheduler = createManualScheduler()
    const observer = new EngineObserver(new EngineFeed(engine, scheduler), windowSlice(MINUTE, 'temp', 0))
    const drawn: (number | undefined)[] = []
    observer.subscribe(() => {
      throw new Error('chart failed')
    })
    observer.subscribe(() => drawn.push(observer.getSnapshot()?.sum))
    engine.emit(MINUTE, 'temp', 0, 7)
    expect(() => scheduler.flush()).toThrow('chart failed')
    expect(drawn).toEqual([7])
  })
})
