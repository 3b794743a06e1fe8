import { createEngine, createManualScheduler, type LateEvent, type ObservedEngine, type StreamEvent, tumbling } from '@tidemark/engine'
import { FakeEngine } from '@tidemark/engine/testing'
import { act, cleanup, render } from '@testing-library/react'
import { Component, type ReactNode } from 'react'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createEngineStore } from '../src/engineStore.ts'
import { EngineProvider } from '../src/EngineProvider.tsx'
import { useEngineStats } from '../src/useEngineStats.ts'
import { useLateEvents } from '../src/useLateEvents.ts'
import { useWindow } from '../src/useWindow.ts'
import { useWindows } from '../src/useWindows.ts'
import { renders, resetProbes, setup, Sum, text } from './probes.tsx'
import { MINUTE } from './windowIds.ts'

// Sentences of packages/react/README.md that no other test pins.

beforeEach(resetProbes)
afterEach(cleanup)

const reading = (id: string, ts: number, value: number): StreamEvent => ({ id, source: 's', ts, key: 'k', value })

/** Shows the error its children threw while rendering or subscribing. */
class Boundary extends Component<{ children: ReactNode }, { error: string | null }> {
  override state = { error: null as string | null }
  static getDerivedStateFromError(error: unknown): { error: string } {
    return { error: error instanceof Error ? error.message : String(error) }
  }
  override render(): ReactNode {
    return this.state.error === null ? this.props.children : <output data-testid="error">{this.state.error}</output>
  }
}

function Tile({ name }: { name: string }) {
  const result = useWindow('tumbling:10', 'k', 0)
  return <output data-testid={name}>{result === undefined ? 'none' : `${result.status} ${result.sum}`}</output>
}

function Keys() {
  const rows = useWindows({ key: 'k' })
  return <output data-testid="keys">{rows.map((r) => `${r.start}:${r.sum}`).join(' ')}</output>
}

function Duplicates() {
  return <output data-testid="duplicates">{useEngineStats((s) => `${s.ingested} ingested, ${s.duplicates} duplicates`)}</output>
}

/** Every late lane `Lane` rendered, in order. */
const seenLanes: (readonly LateEvent[])[] = []

function Lane() {
  const late = useLateEvents()
  seenLanes.push(late)
  return <output data-testid="lane">{late.map((l) => l.event.id).join(' ')}</output>
}

describe('How it works: useWindow answers a frame from its changes', () => {
  it('reads engine.results() when it subscribes, not in the frames that change its window', () => {
    const engine = new FakeEngine()
    engine.emit(MINUTE, 'temp', 0, 1)
    const { frame } = setup(<Sum name="minute" />, engine)
    const readsAtMount = engine.reads.results
    for (let i = 2; i <= 5; i++) {
      engine.emit(MINUTE, 'temp', 0, i)
      frame()
    }
    expect(text('minute')).toBe('5')
    expect(renders('minute')).toBe(5)
    expect(engine.reads.results).toBe(readsAtMount)
  })
})

describe('The store', () => {
  it('getInitialState() is the state when the store was made; the store has no setState', () => {
    const engine = new FakeEngine()
    engine.emit(MINUTE, 'temp', 0, 1)
    const scheduler = createManualScheduler()
    const store = createEngineStore(engine, { scheduler })
    const initial = store.getInitialState()
    expect(initial.results.map((r) => r.sum)).toEqual([1])

    const stop = store.subscribe(() => {})
    engine.emit(MINUTE, 'temp', 0, 2)
    scheduler.flush()
    expect(store.getState().results.map((r) => r.sum)).toEqual([2])
    expect(store.getInitialState()).toBe(initial)
    expect(store.getInitialState().results.map((r) => r.sum)).toEqual([1])
    expect('setState' in store).toBe(false)
    stop()
  })
})

describe('Limits: unmount before closing the engine', () => {
  it('a hook mounted after its engine closed (or a store\'s first subscriber) throws `engine is closed` into React; mounted hooks keep their last values', () => {
    vi.spyOn(console, 'error').mockImplementation(() => {})
    const engine = createEngine({ windows: tumbling(10), allowedLateness: 1_000 })
    const scheduler = createManualScheduler()
    engine.ingest([reading('a', 1, 3)])
    const tree = (late: boolean) => (
      <>
        <EngineProvider engine={engine} scheduler={scheduler}>
          <Tile name="mounted" />
          {late && <Tile name="shared" />}
        </EngineProvider>
        {late && (
          <Boundary>
            <EngineProvider engine={engine} scheduler={scheduler}>
              <Tile name="alone" />
            </EngineProvider>
          </Boundary>
        )}
      </>
    )
    const view = render(tree(false))
    expect(text('mounted')).toBe('provisional 3')
    engine.close()
    view.rerender(tree(true))
    // Alone under its provider, the new hook subscribes to the closed engine: the error boundary catches it.
    expect(text('error')).toBe('engine is closed')
    // Beside a mounted hook of the same provider, it shares the subscription and shows the state the engine closed with.
    expect([text('mounted'), text('shared')]).toEqual(['provisional 3', 'provisional 3'])
    // A store's first subscriber too.
    const store = createEngineStore(engine, { scheduler })
    expect(store.getState().results.map((r) => r.sum)).toEqual([3])
    expect(() => store.subscribe(() => {})).toThrow('engine is closed')
    vi.restoreAllMocks()
  })
})

describe('Limits: a window that leaves live state through retention', () => {
  it('keeps its last value in useWindows until the next change inside its query', () => {
    const engine = createEngine({ windows: tumbling(10), allowedLateness: 0, retention: 10 })
    const scheduler = createManualScheduler()
    render(
      <EngineProvider engine={engine} scheduler={scheduler}>
        <Keys />
      </EngineProvider>,
    )
    engine.ingest([reading('a', 1, 3)])
    engine.advanceWatermark(10) // [0, 10) fires, final
    act(() => scheduler.flush())
    expect(text('keys')).toBe('0:3')
    engine.advanceWatermark(25) // past its retention: it leaves live state without a change
    expect(engine.results({ key: 'k' })).toEqual([])
    act(() => scheduler.flush())
    expect(text('keys')).toBe('0:3')
    engine.ingest([reading('b', 31, 4)]) // a change inside the query: the hook reads again
    act(() => scheduler.flush())
    expect(text('keys')).toBe('30:4')
  })
})

describe('Limits: frames run only after an engine notification', () => {
  it('a batch that changed no window (duplicates only) is notified: the stats show it at the next frame', () => {
    const engine = createEngine({ windows: tumbling(10), allowedLateness: 1_000 })
    const scheduler = createManualScheduler()
    render(
      <EngineProvider engine={engine} scheduler={scheduler}>
        <Duplicates />
      </EngineProvider>,
    )
    engine.ingest([reading('a', 1, 3)])
    act(() => scheduler.flush())
    expect(text('duplicates')).toBe('1 ingested, 0 duplicates')
    engine.ingest([reading('a', 1, 3)]) // the same event again: counted, no window changes
    expect(scheduler.pending).toBe(1)
    act(() => scheduler.flush())
    expect(text('duplicates')).toBe('2 ingested, 1 duplicates')
  })
})

describe('How it works: the provider holds one engine subscription only while a hook is mounted', () => {
  it('subscribes when the first hook mounts and lets go when the last one unmounts, while the provider stays', () => {
    const engine = new FakeEngine()
    const scheduler = createManualScheduler()
    const tree = (tiles: number) => (
      <EngineProvider engine={engine} scheduler={scheduler}>
        <p>header</p>
        {['tile0', 'tile1'].slice(0, tiles).map((name) => (
          <Sum key={name} name={name} />
        ))}
      </EngineProvider>
    )
    const view = render(tree(0))
    expect(engine.listenerCount).toBe(0)
    view.rerender(tree(2))
    expect(engine.listenerCount).toBe(1)
    view.rerender(tree(0))
    expect(engine.listenerCount).toBe(0)
    engine.emit(MINUTE, 'temp', 0, 1)
    expect(scheduler.pending).toBe(0)
  })
})

describe('Decisions: snapshots copy what the engine returns', () => {
  it('an engine that hands out its late lane and mutates it later does not change what React rendered', () => {
    const base = new FakeEngine()
    const lane: LateEvent[] = [{ event: reading('a', 1, 3), reason: 'beyond_lateness' }]
    // An engine whose lateEvents() is its own buffer, mutated in place.
    const engine: ObservedEngine = {
      subscribe: (listener) => base.subscribe(listener),
      results: (query) => base.results(query),
      lateEvents: () => lane,
      stats: () => base.stats(),
      syncStatus: () => base.syncStatus(),
      history: (window, key, start, end) => base.history(window, key, start, end),
      watermark: () => base.watermark(),
    }
    seenLanes.length = 0
    const scheduler = createManualScheduler()
    render(
      <EngineProvider engine={engine} scheduler={scheduler}>
        <Lane />
      </EngineProvider>,
    )
    const first = seenLanes.at(-1) as readonly LateEvent[]
    lane.push({ event: reading('b', 2, 4), reason: 'beyond_lateness' })
    expect(first.map((l) => l.event.id)).toEqual(['a'])
    base.emit(MINUTE, 'temp', 0, 1) // a notification: the frame re-reads the lane
    act(() => scheduler.flush())
    expect(text('lane')).toBe('a b')
    expect(first.map((l) => l.event.id)).toEqual(['a'])
  })
})
