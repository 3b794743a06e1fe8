/**
 * A provider over an engine that `openEngine` recovered from IndexedDB
 * (fake-indexeddb): the first render already shows what the engine held
 * before the tab went away.
 */
// indexedDbPersistence needs IDBKeyRange as a global; each test still opens its own factory.
import 'fake-indexeddb/auto'
import { createManualScheduler, type Engine, type EngineOptions, type StreamEvent, tumbling } from '@tidemark/engine'
import { indexedDbPersistence, openEngine } from '@tidemark/idb'
import { act, cleanup, render, screen } from '@testing-library/react'
import { IDBFactory } from 'fake-indexeddb'
import { afterEach, describe, expect, it } from 'vitest'
import { EngineProvider } from '../src/EngineProvider.tsx'
import { useEngineStats } from '../src/useEngineStats.ts'
import { useLateEvents } from '../src/useLateEvents.ts'
import { useWindows } from '../src/useWindows.ts'

afterEach(cleanup)

const config: EngineOptions = { windows: tumbling(60_000), allowedLateness: 60_000, now: () => 1_000 }

const reading = (seq: number, ts: number, value: number): StreamEvent => ({
  id: `r${seq}`,
  source: 'truck-1',
  seq,
  ts,
  key: 'temp',
  value,
})

function open(indexedDB: IDBFactory): Promise<Engine> {
  return openEngine({ ...config, persistence: indexedDbPersistence({ name: 'fleet', indexedDB }) })
}

let renders = 0

function Dashboard() {
  renders++
  const rows = useWindows(undefined, (all) => all.map((r) => `${r.start}:${r.status}:r${r.revision}:${r.sum}`))
  const late = useLateEvents((lane) => lane.map((l) => `${l.event.id}:${l.reason}`))
  const ingested = useEngineStats((s) => s.ingested)
  return (
    <>
      <output data-testid="windows">{rows.join(' ')}</output>
      <output data-testid="late">{late.join(' ')}</output>
      <output data-testid="ingested">{ingested}</output>
    </>
  )
}

const text = (testId: string): string | null => screen.getByTestId(testId).textContent

describe('over an engine recovered from IndexedDB', () => {
  it('shows the recovered windows, corrections and late lane on the first render, then live changes', async () => {
    const indexedDB = new IDBFactory()
    const before = await open(indexedDB)
    before.ingest([reading(1, 10_000, 1), reading(2, 20_000, 2)])
    before.ingest([reading(3, 70_000, 3)]) // the first minute fires on time
    before.ingest([reading(4, 30_000, 4)]) // late within allowed lateness: a correction
    before.ingest([reading(5, 130_000, 5)]) // the first minute is final (kept for `retention`)
    await before.ingest([reading(6, 40_000, 6)]).durable // beyond lateness: the late lane
    const shown = before.results().map((r) => `${r.start}:${r.status}:r${r.revision}:${r.sum}`)
    expect(shown).toContain('0:corrected:r1:7')
    // The tab goes away without closing the engine; the next one recovers from the log.

    const recovered = await open(indexedDB)
    expect(recovered.results()).toEqual(before.results())
    const scheduler = createManualScheduler()
    renders = 0
    render(
      <EngineProvider engine={recovered} scheduler={scheduler}>
        <Dashboard />
      </EngineProvider>,
    )
    expect(renders).toBe(1)
    expect(text('windows')).toBe(shown.join(' '))
    expect(text('late')).toBe('r6:beyond_lateness')
    expect(text('ingested')).toBe('6')

    // Live again: the recovered engine's changes reach the same components in the next frame.
    recovered.ingest([reading(7, 130_500, 7)])
    expect(text('ingested')).toBe('6')
    act(() => scheduler.flush())
    expect(text('ingested')).toBe('7')
    expect(text('windows')).toContain('120000:provisional:r0:12')
    expect(renders).toBe(2)
    await recovered.close()
  })
})
