import { act, cleanup, render, screen } from '@testing-library/react'
import { StrictMode } from 'react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { useStore } from 'zustand'
import { createEngineStore, type EngineStore } from '../src/engineStore.ts'
import { createManualScheduler } from '@tidemark/engine'
import { FakeEngine } from '@tidemark/engine/testing'
import { MINUTE } from './windowIds.ts'

afterEach(cleanup)

let renders = 0

function Corrections({ store }: { store: EngineStore }) {
  renders++
  const corrections = useStore(store, (s) => s.stats.corrections)
  return <output data-testid="corrections">{corrections}</output>
}

function setup() {
  const engine = new FakeEngine()
  const scheduler = createManualScheduler()
  const store = createEngineStore(engine, { scheduler })
  return { engine, scheduler, store }
}

describe('createEngineStore', () => {
  it('listens to the engine only while subscribed, and reads it directly meanwhile', () => {
    const { engine, scheduler, store } = setup()
    expect(engine.listenerCount).toBe(0)
    engine.emit(MINUTE, 'temp', 0, 3)
    expect(store.getState().results.map((r) => r.sum)).toEqual([3])

    const unsubscribeFirst = store.subscribe(() => {})
    const unsubscribeSecond = store.subscribe(() => {})
    expect(engine.listenerCount).toBe(1)
    unsubscribeFirst()
    unsubscribeFirst() // a repeated call must not drop the second subscriber's listener
    expect(engine.listenerCount).toBe(1)
    engine.emit(MINUTE, 'temp', 0, 4)
    unsubscribeSecond()
    expect(engine.listenerCount).toBe(0)
    expect(scheduler.pending).toBe(0)
  })

  it('updates subscribers once per frame however many batches arrived, keeping unchanged fields', () => {
    const { engine, scheduler, store } = setup()
    const listener = vi.fn()
    store.subscribe(listener)
    const before = store.getState()

    for (let i = 1; i <= 50; i++) engine.emit(MINUTE, 'temp', 0, i)
    expect(listener).not.toHaveBeenCalled()
    expect(store.getState()).toBe(before)

    scheduler.flush()
    expect(listener).toHaveBeenCalledTimes(1)
    const after = store.getState()
    expect(after.results.map((r) => `${r.status}:${r.sum}`)).toEqual(['corrected:50'])
    expect(after.lateEvents).toBe(before.lateEvents)
    expect(after.syncStatus).toBe(before.syncStatus)

    engine.setSync({}) // an equal status: nothing to tell
    scheduler.flush()
    expect(listener).toHaveBeenCalledTimes(1)
  })

  it('tells every listener of a frame when one throws, then rethrows the first error: a component after it is not left stale', () => {
    const { engine, scheduler, store } = setup()
    const failure = new Error('a logger failed')
    store.subscribe(() => {
      throw failure
    })
    const seen: string[] = []
    store.subscribe((state) => seen.push(state.results.map((r) => `${r.status}:${r.sum}`).join()))
    render(<Corrections store={store} />)
    engine.emit(MINUTE, 'temp', 0, 3)
    engine.emit(MINUTE, 'temp', 0, 4)
    engine.setStats({ corrections: 2 })
    expect(screen.getByTestId('corrections').textContent).toBe('0')
    // Caught inside act, so act still renders what the listeners scheduled (it drops the work of a throwing callback).
    let thrown: unknown
    act(() => {
      try {
        scheduler.flush()
      } catch (error) {
        thrown = error
      }
    })
    expect(thrown).toBe(failure)
    expect(seen).toEqual(['corrected:4'])
    // The component subscribed after the throwing listener: it must still show the frame's stats.
    expect(screen.getByTestId('corrections').textContent).toBe('2')
  })

  it('re-renders a useStore selector only when its selection changes', () => {
    const { engine, scheduler, store } = setup()
    render(
      <StrictMode>
        <Corrections store={store} />
      </StrictMode>,
    )
    expect(engine.listenerCount).toBe(1)
    const afterMount = renders

    engine.setStats({ ingested: 100 })
    engine.emit(MINUTE, 'temp', 0, 1)
    act(() => scheduler.flush())
    expect(renders).toBe(afterMount)

    engine.setStats({ corrections: 1 })
    engine.setStats({ corrections: 2 })
    act(() => scheduler.flush())
    expect(screen.getByTestId('corrections').textContent).toBe('2')
    // StrictMode renders twice per update in development.
    expect(renders - afterMount).toBe(2)

    cleanup()
    expect(engine.listenerCount).toBe(0)
  })

  it('calls a listener only for frames after it subscribed, never inside subscribe, even when the engine changed before', () => {
    const { engine, scheduler, store } = setup()
    engine.emit(MINUTE, 'temp', 0, 3)
    const calls: number[] = []
    // The usual unsubscribe-once pattern: `unsubscribe` must exist when the listener first runs.
    const unsubscribe = store.subscribe((state) => {
      calls.push(state.results[0]?.sum ?? -1)
      unsubscribe()
    })
    expect(calls).toEqual([])
    expect(store.getState().results.map((r) => r.sum)).toEqual([3])
    engine.emit(MINUTE, 'temp', 0, 5)
    scheduler.flush()
    expect(calls).toEqual([5])
    expect(engine.listenerCount).toBe(0)
  })
})
