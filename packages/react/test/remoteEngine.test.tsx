/**
 * The hooks over a real engine whose windows change only through Yjs: engine
 * `device` ingests, its doc's updates are applied to the doc of engine
 * `dashboard` (as a provider would), and `dashboard` merges them.
 */
import {
  createEngine,
  createManualScheduler,
  type Engine,
  type EngineOptions,
  session,
  type StreamEvent,
  tumbling,
} from '@tidemark/engine'
import { bindDoc } from '@tidemark/yjs'
import { act, cleanup, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { EngineProvider } from '../src/EngineProvider.tsx'
import { useWindow } from '../src/useWindow.ts'
import { useWindowHistory } from '../src/useWindowHistory.ts'
import { useWindows } from '../src/useWindows.ts'

afterEach(cleanup)

const MINUTE = 'tumbling:60000'
const SESSION = 'session:10000'
const config: EngineOptions = {
  windows: [tumbling(60_000), session(10_000)],
  allowedLateness: 120_000,
  now: () => 1_000,
}
const rethrow = {
  onError: (error: Error) => {
    throw error
  },
}

const renders = new Map<string, number>()
const hit = (name: string): void => {
  renders.set(name, (renders.get(name) ?? 0) + 1)
}

function Minute({ seriesKey = 'temp' }: { seriesKey?: string }) {
  hit(`minute:${seriesKey}`)
  const result = useWindow(MINUTE, seriesKey, 0)
  const history = useWindowHistory(MINUTE, seriesKey, 0, (h) => h.map((r) => `${r.status}:${r.sum}`).join(' '))
  return (
    <>
      <output data-testid={`minute:${seriesKey}`}>
        {result === undefined ? 'none' : `${result.status} r${result.revision} ${result.sum}`}
      </output>
      <output data-testid={`history:${seriesKey}`}>{history}</output>
    </>
  )
}

function Sessions() {
  hit('sessions')
  const sessions = useWindows({ window: SESSION, key: 'temp' }, (rows) => rows.map((r) => `${r.start}:${r.sum}`))
  const second = useWindow(SESSION, 'temp', 20_000)
  return (
    <>
      <output data-testid="sessions">{sessions.join(' ')}</output>
      <output data-testid="session-20000">{second === undefined ? 'none' : second.sum}</output>
    </>
  )
}

const text = (testId: string): string | null => screen.getByTestId(testId).textContent
const reading = (id: string, ts: number, value: number, key = 'temp'): StreamEvent => ({
  id,
  source: 'truck-1',
  ts,
  key,
  value,
})

/** A device engine, a dashboard engine on another doc, and a wire that carries what the dashboard lacks. */
function replicas() {
  const deviceDoc = new Y.Doc()
  const dashboardDoc = new Y.Doc()
  const device = createEngine({ ...config, replicaId: 'device' })
  bindDoc(device, deviceDoc, rethrow)
  const dashboard = createEngine({ ...config, replicaId: 'dashboard' })
  bindDoc(dashboard, dashboardDoc, rethrow)
  const sync = (): void => {
    Y.applyUpdate(dashboardDoc, Y.encodeStateAsUpdate(deviceDoc, Y.encodeStateVector(dashboardDoc)), 'wire')
  }
  return { device, dashboard, deviceDoc, dashboardDoc, sync }
}

function mount(engine: Engine) {
  renders.clear()
  const scheduler = createManualScheduler()
  render(
    <EngineProvider engine={engine} scheduler={scheduler}>
      <Minute />
      <Minute seriesKey="humidity" />
      <Sessions />
    </EngineProvider>,
  )
  renders.clear()
  return { frame: (): void => act(() => scheduler.flush()) }
}

describe('over an engine that receives remote updates through Yjs', () => {
  it('shows remote on-time values, corrections with their history, and retracted sessions', () => {
    const { device, dashboard, sync } = replicas()
    const { frame } = mount(dashboard)

    device.ingest([reading('1', 1_000, 10), reading('2', 20_000, 20)])
    sync()
    frame()
    expect(text('minute:temp')).toBe('provisional r0 30')
    expect(text('sessions')).toBe('1000:10 20000:20')

    device.ingest([reading('3', 70_000, 5)]) // the device's watermark passes the first minute
    sync()
    frame()
    expect(text('minute:temp')).toBe('on_time r0 30')
    expect(text('history:temp')).toBe('on_time:30')

    device.ingest([reading('4', 5_000, 30)]) // late, within allowed lateness: a correction
    sync()
    frame()
    expect(text('minute:temp')).toBe('corrected r1 60')
    expect(text('history:temp')).toBe('on_time:30 corrected:60')
    expect(text('sessions')).toBe('1000:40 20000:20 70000:5')

    // Bridges the sessions at 1000 and 20000: the merge retracts the later one.
    device.ingest([reading('5', 12_000, 1)])
    sync()
    frame()
    expect(text('sessions')).toBe('1000:61 70000:5')
    expect(text('session-20000')).toBe('none')
    expect(text('minute:temp')).toBe('corrected r2 61')
    expect(text('history:temp')).toBe('on_time:30 corrected:60 corrected:61')

    // The dashboard shows what the device shows.
    expect(dashboard.results()).toEqual(device.results())
    // Every frame rendered each component at most once; the humidity minute never changed.
    expect(renders.get('minute:temp')).toBe(4)
    expect(renders.get('sessions')).toBe(4)
    expect(renders.get('minute:humidity')).toBeUndefined()
  })

  it('renders once per frame under a burst of remote updates, with the last merged value', () => {
    const { device, dashboard, deviceDoc, dashboardDoc } = replicas()
    Y.applyUpdate(dashboardDoc, Y.encodeStateAsUpdate(deviceDoc), 'wire')
    const updates: Uint8Array[] = []
    deviceDoc.on('update', (update: Uint8Array) => updates.push(update))
    let notifications = 0
    dashboard.subscribe(() => notifications++)
    const { frame } = mount(dashboard)

    for (let i = 1; i <= 50; i++) device.ingest([reading(`e${i}`, i * 100, i)])
    expect(updates.length).toBe(50)
    for (const update of updates) Y.applyUpdate(dashboardDoc, update, 'wire')
    expect(notifications).toBe(50)
    expect(renders.size).toBe(0) // nothing before the frame

    frame()
    expect(text('minute:temp')).toBe(`provisional r0 ${(50 * 51) / 2}`)
    expect(renders.get('minute:temp')).toBe(1)
    expect(renders.get('sessions')).toBe(1)
    expect(renders.get('minute:humidity')).toBeUndefined()

    frame() // nothing new: no render
    expect(renders.get('minute:temp')).toBe(1)
  })
})
