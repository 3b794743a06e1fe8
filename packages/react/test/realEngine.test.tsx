import { afterProcessingTime, createEngine, createManualScheduler, cumulating, distinct, manual, quantiles, type StreamEvent, tumbling } from '@tidemark/engine'
import { act, cleanup, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import { createEngineStore } from '../src/engineStore.ts'
import { EngineProvider } from '../src/EngineProvider.tsx'
import { useEngineStats } from '../src/useEngineStats.ts'
import { useLateEvents } from '../src/useLateEvents.ts'
import { useWindow } from '../src/useWindow.ts'
import { useWindowHistory } from '../src/useWindowHistory.ts'
import { windowHooks } from '../src/windowHooks.ts'

afterEach(cleanup)

const MINUTE = 'tumbling:60000'

function Minute() {
  const result = useWindow(MINUTE, 'temp', 0)
  const history = useWindowHistory(MINUTE, 'temp', 0, (h) => h.map((r) => r.sum).join(','))
  const ingested = useEngineStats((s) => s.ingested)
  const late = useLateEvents((lane) => lane.map((l) => l.event.id).join(','))
  return (
    <>
      <output data-testid="result">{result ? `${result.status} r${result.revision} ${result.sum}` : 'none'}</output>
      <output data-testid="history">{history}</output>
      <output data-testid="ingested">{ingested}</output>
      <output data-testid="late">{late}</output>
    </>
  )
}

/** Panes of a minute, and of the first, second and whole windows of a cumulating spec. */
function Panes() {
  const minute = useWindow(MINUTE, 'temp', 0, (r) => (r === undefined ? 'none' : `${r.pane.timing} #${r.pane.index}/${r.pane.onTimeIndex} ${r.sum}`))
  const first = useWindow('cumulating:180000:60000', 'temp', { start: 0, end: 60_000 }, (r) => r?.sum ?? 'none')
  const second = useWindow('cumulating:180000:60000', 'temp', { start: 0, end: 120_000 }, (r) => r?.sum ?? 'none')
  const whole = useWindow('cumulating:180000:60000', 'temp', 0, (r) => r?.end ?? 'none')
  const late = useWindowHistory('cumulating:180000:60000', 'temp', { start: 0, end: 60_000 }, (h) => h.map((r) => r.pane.timing).join(','))
  return <output data-testid="panes">{`${minute} | ${first} ${second} ${whole} | ${late}`}</output>
}

const aggregates = { latency: quantiles({ at: [0.5, 0.95] }), devices: distinct({ of: (e) => e.source }) }
const typed = windowHooks<typeof aggregates>()

/** The typed hooks: a minute's p95 and device count, and the p95 it showed on time. */
function Latency() {
  const p95 = typed.useWindow(MINUTE, 'temp', 0, (r) => (r === undefined ? 'none' : `${r.aggregates.latency[1]} from ${r.aggregates.devices}`))
  const onTime = typed.useWindowHistory(MINUTE, 'temp', 0, (h) => h.map((r) => r.aggregates.latency[1]).join(','))
  const all = typed.useWindows({ window: MINUTE }, (rows) => rows.map((r) => r.aggregates.devices).join(','))
  return <output data-testid="latency">{`${p95} | ${onTime} | ${all}`}</output>
}

const reading = (id: string, ts: number, value: number): StreamEvent => ({ id, source: 'd1', ts, key: 'temp', value })
const text = (testId: string): string | null => screen.getByTestId(testId).textContent

describe('with the real engine', () => {
  it('typed hooks show aggregates, and a late event corrects p95', () => {
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), allowedLateness: 60_000, aggregates })
    const scheduler = createManualScheduler()
    const frame = (): void => act(() => scheduler.flush())
    render(
      <EngineProvider engine={engine} scheduler={scheduler}>
        <Latency />
      </EngineProvider>,
    )
    engine.ingest([reading('1', 10, 8), reading('2', 20, 8), { ...reading('3', 30, 8), source: 'd2' }])
    engine.advanceWatermark(60_000)
    frame()
    expect(text('latency')).toBe('8 from 2 | 8 | 2')
    // Ranks ⌊0.95 · 5⌋ of six: the fifth, 1,000.
    engine.ingest(['4', '5', '6'].map((id) => ({ ...reading(id, 40, 1_000), source: 'd3' })))
    frame()
    const [p95, history, all] = (text('latency') ?? '').split(' | ')
    expect(Math.abs(Number(p95?.split(' ')[0]) - 1_000) / 1_000).toBeLessThanOrEqual(0.01)
    expect(p95).toMatch(/ from 3$/)
    expect(history?.split(',')).toEqual(['8', p95?.split(' ')[0]])
    expect(all).toBe('3')
  })

  it('shows the provisional, on-time and corrected value, its history, stats and the late lane', () => {
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), allowedLateness: 60_000 })
    const scheduler = createManualScheduler()
    const frame = (): void => act(() => scheduler.flush())
    const view = render(
      <EngineProvider engine={engine} scheduler={scheduler}>
        <Minute />
      </EngineProvider>,
    )
    expect(text('result')).toBe('none')

    engine.ingest([reading('1', 10, 20), reading('2', 20, 22)])
    frame()
    expect(text('result')).toBe('provisional r0 42')
    expect(text('ingested')).toBe('2')

    engine.advanceWatermark(60_000)
    frame()
    expect(text('result')).toBe('on_time r0 42')

    engine.ingest([reading('3', 30, 30)]) // late, within allowed lateness
    frame()
    expect(text('result')).toBe('corrected r1 72')
    expect(text('history')).toBe('42,72')

    engine.advanceWatermark(200_000)
    // Beyond lateness for [0, 60000), on time for [180000, 240000): one batch, one notification.
    engine.ingest([reading('4', 31, 30), reading('5', 190_000, 1)])
    frame()
    expect(text('late')).toBe('4')
    expect(text('result')).toBe('corrected r1 72')

    view.unmount()
    act(() => scheduler.flush())
    expect(scheduler.pending).toBe(0)
  })

  it('passes each result’s pane through, and tells the windows of a cumulating spec apart by their end', () => {
    const clock = { now: 0 }
    const engine = createEngine({
      windows: [tumbling(60_000), cumulating(180_000, 60_000)],
      watermark: manual(),
      allowedLateness: 60_000,
      trigger: { early: afterProcessingTime(1_000) },
      now: () => clock.now,
    })
    const scheduler = createManualScheduler()
    const frame = (): void => act(() => scheduler.flush())
    render(
      <EngineProvider engine={engine} scheduler={scheduler}>
        <Panes />
      </EngineProvider>,
    )
    engine.ingest([reading('1', 10, 20), reading('2', 70_000, 5)])
    frame()
    // The early trigger waits for a tick a second after the first element.
    expect(text('panes')).toBe('none | none none none | ')
    clock.now = 1_000
    engine.tick()
    frame()
    expect(text('panes')).toBe('early #0/-1 20 | 20 25 180000 | ')
    engine.advanceWatermark(60_000)
    engine.ingest([reading('3', 20, 1)])
    frame()
    // [0, 60000) fired: its late pane comes at once (the default late trigger); [0, 120000) has
    // not, so its next early pane waits for the timer the new element started.
    expect(text('panes')).toBe('late #2/1 21 | 21 25 180000 | on_time,late')
    clock.now = 2_000
    engine.tick()
    frame()
    expect(text('panes')).toBe('late #2/1 21 | 21 26 180000 | on_time,late')
  })

  it('keeps the stats and their future sources by identity while they read the same (each read of the engine makes new source records)', () => {
    let now = 1_000_000
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), maxFutureSkew: 1_000, now: () => now })
    engine.ingest([{ ...reading('ahead', now + 60_000, 1), source: 'd9' }])
    expect(engine.stats().futureSources).toHaveLength(1)
    const scheduler = createManualScheduler()
    const store = createEngineStore(engine, { scheduler })
    // Read without a subscriber (what zustand's useStore does first): the same state while nothing changed.
    expect(store.getState()).toBe(store.getState())
    const notified: string[] = []
    store.subscribe((state, previous) => {
      notified.push(state.stats === previous.stats ? 'same stats' : 'new stats')
    })
    const sources = store.getState().stats.futureSources
    now += 1
    engine.tick()
    scheduler.flush()
    expect(notified).toEqual([])
    // Another counter changes: the stats are new, the future sources keep their identity.
    engine.ingest([reading('1', 10, 8)])
    scheduler.flush()
    expect(notified).toEqual(['new stats'])
    expect(store.getState().stats.futureSources).toBe(sources)
    expect(store.getState().stats.anomalies.future_ts).toBe(1)
  })
})
