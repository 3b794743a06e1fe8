import { createFrameScheduler, EngineProvider } from '@tidemark/react'
import { type ReactNode, useState } from 'react'
import { METRICS } from './fleet/metrics.ts'
import { ActivityFeed } from './ui/ActivityFeed.tsx'
import { ChartLegend } from './ui/ChartLegend.tsx'
import { ControlBar } from './ui/ControlBar.tsx'
import { DeviceTable } from './ui/DeviceTable.tsx'
import { Header } from './ui/Header.tsx'
import { LateLaneTable } from './ui/LateLaneTable.tsx'
import { StatsPanel } from './ui/StatsPanel.tsx'
import { useFleet } from './ui/useFleet.ts'
import { WindowChart } from './ui/WindowChart.tsx'

/**
 * The fleet dashboard. Everything engine-related renders through one
 * `EngineProvider` over the dashboard engine, at most once per animation frame;
 * new settings bring a new engine and a fresh provider.
 */
export function App(): ReactNode {
  const [scheduler] = useState(createFrameScheduler)
  const dashboard = useFleet((s) => s.dashboard)
  const generation = useFleet((s) => s.generation)
  return (
    <EngineProvider key={generation} engine={dashboard} scheduler={scheduler}>
      <div className="app">
        <Header />
        <ControlBar />
        <main className="layout">
          <div className="charts">
            <ChartLegend />
            {METRICS.map((metric) => (
              <WindowChart key={metric.key} metric={metric} />
            ))}
          </div>
          <aside className="side">
            <StatsPanel />
            <ActivityFeed />
          </aside>
        </main>
        <div className="lower">
          <DeviceTable />
          <LateLaneTable />
        </div>
        <footer className="footer">
          Each device runs its own engine and source; its uploads reach the dashboard engine through{' '}
          <code>src/fleet/link.ts</code> (Yjs replication and the IndexedDB write-ahead log are not wired in yet, so a
          crash loses unsent readings).
        </footer>
      </div>
    </EngineProvider>
  )
}
