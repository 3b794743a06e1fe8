import { createManualScheduler, manual, tumbling } from '@tidemark/engine'
import { act, cleanup, render, screen } from '@testing-library/react'
import { afterEach, describe, expect, it } from 'vitest'
import { EngineProvider } from '../src/EngineProvider.tsx'
import { useWindowHistory } from '../src/useWindowHistory.ts'
import { World } from '../../worker/test/hostHarness.ts'

afterEach(cleanup)

function History() {
  const history = useWindowHistory('tumbling:10', 'k', 0, (h) => h.map((r) => `${r.status}:${r.sum}`).join(' '))
  return <output data-testid="history">{history}</output>
}

describe('useWindowHistory over a RemoteEngine, before the host sent the history', () => {
  it('shows the fired window meanwhile, not an empty history', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: { windows: tumbling(10), watermark: manual(), allowedLateness: 1_000 }, log: false })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    await page.engine.ingest([{ id: 'a', source: 's', ts: 1, key: 'k', value: 3 }])
    await page.engine.advanceWatermark(20)
    await page.engine.ingest([{ id: 'b', source: 's', ts: 2, key: 'k', value: 4 }])
    await world.run()
    expect(page.engine.results().map((r) => `${r.status}:${r.sum}`)).toEqual(['corrected:7'])
    const scheduler = createManualScheduler()
    render(
      <EngineProvider engine={page.engine} scheduler={scheduler}>
        <History />
      </EngineProvider>,
    )
    // Rendered and committed (two reads: the render's and the subscription's); the page asked
    // the host for the history of [0, 10) at the first and shows its latest pane meanwhile.
    expect(screen.getByTestId('history').textContent).toBe('corrected:7')
    await act(() => world.run())
    act(() => scheduler.flush())
    expect(screen.getByTestId('history').textContent).toBe('on_time:3 corrected:7')
  })
})
