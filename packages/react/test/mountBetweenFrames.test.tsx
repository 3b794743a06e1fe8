import { createEngine, createManualScheduler, type Engine, type ManualScheduler, type StreamEvent, tumbling } from '@tidemark/engine'
import { act, cleanup, render } from '@testing-library/react'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { renders, resetProbes, Rows, Sum, setup, text } from './probes.tsx'
import { MINUTE } from './windowIds.ts'
import { EngineProvider } from '../src/EngineProvider.tsx'
import { useWindow } from '../src/useWindow.ts'

beforeEach(resetProbes)
afterEach(cleanup)

/** `a`, and from a later commit on (`later`), `b` and `rows` beside it; `a` stays mounted throughout. */
const Hooks = ({ later = false }: { later?: boolean }) => (
  <>
    <Sum name="a" />
    {later && <Sum name="b" />}
    {later && <Rows query={{ window: MINUTE }} />}
  </>
)

describe('a hook mounted after the engine changed, before the next frame', () => {
  it('renders no state older than the hooks mounted before it, and misses no change', () => {
    const { engine, frame, rerender } = setup(<Hooks />)
    engine.emit(MINUTE, 'temp', 0, 1)
    frame()
    expect(text('a')).toBe('1')

    engine.emit(MINUTE, 'temp', 0, 2) // the frame that shows it has not run
    rerender(<Hooks later />)
    // One commit: `a` shows the last frame until the next one, the new hooks the engine as it is
    // now (they read it when made): ahead of `a` for at most a frame, never behind it.
    expect(text('a')).toBe('1')
    expect(text('b')).toBe('2')
    expect(text('rows')).toBe('0:2')

    const mounted = renders('b')
    frame()
    expect([text('a'), text('b'), text('rows')]).toEqual(['2', '2', '0:2'])
    expect(renders('b')).toBe(mounted) // the frame had nothing new for it

    engine.emit(MINUTE, 'temp', 0, 3)
    frame()
    expect([text('a'), text('b'), text('rows')]).toEqual(['3', '3', '0:3'])
  })

  it('sees a change made after it mounted that the same frame carries', () => {
    const { engine, frame, rerender } = setup(<Hooks />)
    engine.emit(MINUTE, 'temp', 0, 1) // pending
    rerender(<Hooks later />)
    engine.emit(MINUTE, 'temp', 0, 2) // same frame, after `b` and `rows` read the engine
    frame()
    expect([text('a'), text('b'), text('rows')]).toEqual(['2', '2', '0:2'])
  })
})

const minuteRenders: Record<string, number> = {}

/** The window [0, 10) of key `k`, as a `useWindow` shows it; its renders counted by name. */
function Minute({ name }: { name: string }) {
  minuteRenders[name] = (minuteRenders[name] ?? 0) + 1
  const result = useWindow('tumbling:10', 'k', 0)
  return <output data-testid={name}>{result === undefined ? 'none' : `${result.status} ${result.sum}${result.final ? ' final' : ''}`}</output>
}

/** `earlier`, and from a later commit on `later`, each a `Minute` of `engine`. */
function minutes(engine: Engine, scheduler: ManualScheduler, names: readonly [string, string] = ['earlier', 'later']) {
  return (later: boolean) => (
    <EngineProvider engine={engine} scheduler={scheduler}>
      <Minute name={names[0]} />
      {later && <Minute name={names[1]} />}
    </EngineProvider>
  )
}

/** Between two frames, [0, 10) fires and leaves live state: at once, or behind a backlog the feed compacts. */
const leaves: [string, (engine: Engine) => void][] = [
  // Fires [0, 10) on time, final, and past its retention it leaves live state.
  ['at once', (engine) => engine.advanceWatermark(100)],
  [
    'behind a compacted backlog (> 4,096 changes: a hidden tab)',
    (engine) => {
      // [0, 10) fires, then 5,000 other windows change, so the feed compacts its backlog (the
      // watched [0, 10) is kept), then [0, 10) leaves live state.
      engine.advanceWatermark(15)
      const others: StreamEvent[] = Array.from({ length: 5_000 }, (_, i) => ({ id: `o${i}`, source: 's', ts: 15, key: `o${i}`, value: 1 }))
      engine.ingest(others)
      for (const event of others.slice(0, 100)) engine.ingest([{ ...event, id: `${event.id}'`, ts: 16 }])
      engine.advanceWatermark(100)
    },
  ],
]

describe('a hook mounted after a window fired and left live state, before the frame that carries the firing', () => {
  it.each(leaves)('keeps what it read (no result) when the window left %s: the frame does not bring back the older value, nor render it again', (_when, leave) => {
    const engine = createEngine({ windows: tumbling(10), allowedLateness: 0, retention: 10 })
    const scheduler = createManualScheduler()
    const tree = minutes(engine, scheduler)
    const view = render(tree(false))
    engine.ingest([{ id: 'a', source: 's', ts: 1, key: 'k', value: 3 }])
    act(() => scheduler.flush())
    leave(engine)
    expect(engine.results({ key: 'k' })).toEqual([])
    view.rerender(tree(true))
    expect(text('later')).toBe('none')
    const mounted = minuteRenders.later
    act(() => scheduler.flush())
    // The hook mounted before keeps the last value it heard (a window leaving live state sends no change).
    expect([text('earlier'), text('later')]).toEqual(['on_time 3 final', 'none'])
    expect(minuteRenders.later).toBe(mounted)
  })
})

describe('a hook mounted between frames while the feed holds a compacted backlog (> 4,096 changes, a hidden tab)', () => {
  it('still shows a change the same frame carries that was made after it mounted', () => {
    const engine = createEngine({ windows: tumbling(10), allowedLateness: 1_000 })
    const scheduler = createManualScheduler()
    const tree = minutes(engine, scheduler, ['earlier2', 'later2'])
    const view = render(tree(false))
    engine.ingest([{ id: 'a', source: 's', ts: 1, key: 'k', value: 3 }])
    engine.ingest(Array.from({ length: 5_000 }, (_, i) => ({ id: `o${i}`, source: 's', ts: 15, key: `o${i}`, value: 1 })))
    view.rerender(tree(true))
    expect(text('later2')).toBe('on_time 3')
    engine.ingest([{ id: 'b', source: 's', ts: 2, key: 'k', value: 4 }])
    act(() => scheduler.flush())
    expect([text('earlier2'), text('later2')]).toEqual(['corrected 7', 'corrected 7'])
  })
})
