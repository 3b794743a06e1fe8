import { act, cleanup, render } from '@testing-library/react'
import { Profiler, StrictMode } from 'react'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { EngineProvider } from '../src/EngineProvider.tsx'
import { createManualScheduler } from '@tidemark/engine'
import { FakeEngine } from '@tidemark/engine/testing'
import { MINUTE } from './windowIds.ts'
import { Dashboard, resetProbes, Sum, setup, text, WriteDuringRender } from './probes.tsx'

beforeEach(resetProbes)
afterEach(cleanup)

describe('lifecycle', () => {
  it('shares one engine listener per provider and removes it, and any pending frame, on unmount', () => {
    const { engine, scheduler, view } = setup(
      <>
        <Dashboard />
        <Dashboard />
      </>,
    )
    expect(engine.listenerCount).toBe(1)
    engine.emit(MINUTE, 'temp', 0, 1)
    expect(scheduler.pending).toBe(1)
    view.unmount()
    expect(engine.listenerCount).toBe(0)
    expect(scheduler.pending).toBe(0)
  })

  it('catches a change made between its first render and its subscription', () => {
    const engine = new FakeEngine()
    const { scheduler } = setup(
      <>
        <Sum name="sum" />
        <WriteDuringRender write={() => engine.emit(MINUTE, 'temp', 0, 5)} />
      </>,
      engine,
    )
    expect(scheduler.pending).toBe(0)
    expect(text('sum')).toBe('5')
  })

  it('moves its listener when the provider gets another engine', () => {
    const first = new FakeEngine()
    const second = new FakeEngine()
    second.emit(MINUTE, 'temp', 0, 42)
    const { rerender } = setup(<Sum name="sum" />, first)
    rerender(<Sum name="sum" />, second)
    expect(first.listenerCount).toBe(0)
    expect(second.listenerCount).toBe(1)
    expect(text('sum')).toBe('42')
  })

  it('is StrictMode safe: one listener, one commit per frame, none left after unmount', () => {
    let commits = 0
    const engine = new FakeEngine()
    const scheduler = createManualScheduler()
    const view = render(
      <StrictMode>
        <EngineProvider engine={engine} scheduler={scheduler}>
          <Profiler id="dashboard" onRender={() => commits++}>
            <Sum name="sum" />
            <Dashboard />
          </Profiler>
        </EngineProvider>
      </StrictMode>,
    )
    expect(engine.listenerCount).toBe(1)
    const afterMount = commits

    for (let i = 1; i <= 50; i++) engine.emit(MINUTE, 'temp', 0, i)
    act(() => scheduler.flush())
    expect(commits - afterMount).toBe(1)
    expect(text('sum')).toBe('50')

    view.unmount()
    expect(engine.listenerCount).toBe(0)
  })
})
