import { createFrameScheduler, EngineProvider } from '@tidemark/react'
import { type ReactNode, useState } from 'react'
import { ActivityFeed } from './ui/ActivityFeed.tsx'
import { ChartLegend } from './ui/ChartLegend.tsx'
import { CHART_MEASURES } from './ui/chartMeasure.ts'
import { ControlBar } from './ui/ControlBar.tsx'
import { DeviceTable } from './ui/DeviceTable.tsx'
import { Header } from './ui/Header.tsx'
import { LateDataTable } from './ui/LateDataTable.tsx'
import { StatsPanel } from './ui/StatsPanel.tsx'
import { useFleet } from './ui/useFleet.ts'
import { WindowChart } from './ui/WindowChart.tsx'

/**
 * The fleet dashboard. Everything engine-related renders through one `EngineProvider` over the
 * dashboard engine (this page's mirror of the engine its host worker runs), at most once per
 * animation frame; new settings bring a new engine and a fresh provider.
 */
export function App(): ReactNode {
  const [scheduler] = useState(createFrameScheduler)
  const dashboard = useFleet((s) => s.dashboard)
  const generation = useFleet((s) => s.generation)
  const notice = useFleet((s) => s.wiring.relayNotice)
  if (dashboard === null) {
    return (
      <div className="app">
        <section className="panel">
          <p className="empty">Starting the dashboard engine's host worker…</p>
        </section>
      </div>
    )
  }
  return (
    <EngineProvider key={generation} engine={dashboard} scheduler={scheduler}>
      <div className="app">
        <Header />
        <ControlBar />
        {notice !== null && <p className="notice">{notice}</p>}
        <main className="layout">
          <div className="charts">
            <ChartLegend />
            {CHART_MEASURES.map((measure) => (
              <WindowChart key={measure.id} measure={measure} />
            ))}
          </div>
          <aside className="side">
            <StatsPanel />
            <ActivityFeed />
          </aside>
        </main>
        <div className="lower">
          <DeviceTable />
          <LateDataTable />
        </div>
        <footer className="footer">
          Each device is its own source with its own engine, Y.Doc and IndexedDB write-ahead log, in a host worker of its
          own, and writes its own room on the relay with a token for that room alone. The dashboard engine owns no source:
          its host worker follows every device room read-only and sees only the lattice state merged from them; this page
          draws from its mirror. Open a device with <span className="mono">Tab ↗</span>: the tab shares the device's worker.
        </footer>
      </div>
    </EngineProvider>
  )
}
