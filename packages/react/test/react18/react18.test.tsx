import { createEngine, manual, type StreamEvent, tumbling } from '@tidemark/engine'
import { act, type ReactNode, StrictMode, version } from 'react'
import { version as domVersion } from 'react-dom'
import { createRoot, type Root } from 'react-dom/client'
import { afterEach, describe, expect, it } from 'vitest'
import {
  createManualScheduler,
  EngineProvider,
  useEngineStats,
  useLateEvents,
  useWatermark,
  useWindow,
  useWindowHistory,
  useWindows,
} from '../../src/index.ts'

/**
 * The package's source under React 18.3.1: this directory is a package whose `react` and
 * `react-dom` are 18.3.1, and the `react18` Vitest project (vitest.config.ts) gives the source
 * outside it the same React, so these components, the provider and the hooks all run on React 18,
 * rendered by react-dom 18's client in happy-dom.
 */

// React 18's `act` flushes, and does not warn, only where the environment says it is a test.
;(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true

const MINUTE = 'tumbling:60000'
const reading = (id: string, ts: number, value: number): StreamEvent => ({ id, source: 'd1', ts, key: 'temp', value })

function Dashboard() {
  const minute = useWindow(MINUTE, 'temp', 0, (r) => (r === undefined ? 'none' : `${r.status} r${r.revision} ${r.sum}`))
  const history = useWindowHistory(MINUTE, 'temp', 0, (h) => h.map((r) => r.sum).join(','))
  const rows = useWindows({ window: MINUTE }, (all) => all.map((r) => `${r.start}:${r.sum}`).join(' '))
  const ingested = useEngineStats((s) => s.ingested)
  const late = useLateEvents((lane) => lane.map((l) => l.event.id).join(','))
  const watermark = useWatermark()
  return <output>{`${minute} | ${history} | ${rows} | ${ingested} | ${late} | ${watermark}`}</output>
}

let root: Root | null = null
let container: HTMLElement | null = null
const shown = (): string | null | undefined => container?.textContent

afterEach(() => {
  act(() => root?.unmount())
  root = null
  container?.remove()
  container = null
})

function mount(children: ReactNode): void {
  container = document.body.appendChild(document.createElement('div'))
  const created = createRoot(container)
  root = created
  act(() => created.render(children))
}

describe('on React 18', () => {
  it('runs React 18.3.1 and react-dom 18.3.1', () => {
    expect(version).toBe('18.3.1')
    expect(domVersion).toBe('18.3.1')
  })

  it('renders EngineProvider with the hooks over a real engine, and shows each frame’s changes', () => {
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), allowedLateness: 60_000 })
    const scheduler = createManualScheduler()
    const frame = (): void => act(() => scheduler.flush())
    mount(
      <StrictMode>
        <EngineProvider engine={engine} scheduler={scheduler}>
          <Dashboard />
        </EngineProvider>
      </StrictMode>,
    )
    expect(shown()).toBe('none |  |  | 0 |  | -Infinity')

    engine.ingest([reading('1', 10, 2), reading('2', 20, 3)])
    expect(shown()).toBe('none |  |  | 0 |  | -Infinity') // nothing before the frame
    frame()
    expect(shown()).toBe('provisional r0 5 |  | 0:5 | 2 |  | -Infinity')

    engine.advanceWatermark(60_000)
    frame()
    expect(shown()).toBe('on_time r0 5 | 5 | 0:5 | 2 |  | 60000')

    // Late but within lateness: a correction; beyond it, the late lane (and the minute has left
    // live state: useWindow keeps its last value, the history and useWindows are empty).
    engine.ingest([reading('3', 30, 10)])
    frame()
    expect(shown()).toBe('corrected r1 15 | 5,15 | 0:15 | 3 |  | 60000')
    engine.advanceWatermark(180_000)
    engine.ingest([reading('4', 40, 1)])
    frame()
    expect(shown()).toBe('corrected r1 15 |  |  | 4 | 4 | 180000')
  })

  it('renders with the default frame scheduler (requestAnimationFrame)', async () => {
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual() })
    mount(
      <EngineProvider engine={engine}>
        <Dashboard />
      </EngineProvider>,
    )
    engine.ingest([reading('1', 10, 7)])
    expect(shown()).toBe('none |  |  | 0 |  | -Infinity')
    // The provider's frame was requested first, so it has run once this frame's callback runs.
    await act(() => new Promise<void>((resolve) => requestAnimationFrame(() => resolve())))
    expect(shown()).toBe('provisional r0 7 |  | 0:7 | 1 |  | -Infinity')
  })
})
