import { createEngine, type Engine, tickWhenDue, type WindowResult } from '@tidemark/engine'
import {
  EngineProvider,
  useEngineStats,
  useSyncStatus,
  useWatermark,
  useWindowHistory,
  useWindows,
} from '@tidemark/react'
import { connectRelay, followRooms, type RelayToken } from '@tidemark/yjs'
import type { ReactNode } from 'react'
import { createRoot } from 'react-dom/client'
import { FLEET, fleetOptions } from './fleet.ts'

// #region engine
/** A dashboard's engine: it ingests nothing and shows what the devices' cells add up to. */
export function openDashboard(relayUrl: string, token: RelayToken): { engine: Engine; close(): Promise<void> } {
  const engine = createEngine(fleetOptions)
  const relay = connectRelay({ url: relayUrl, token })
  // Every device room the relay lists, now and later, bound read-only, over one socket.
  const fleet = followRooms(engine, relay, { directory: `${FLEET}/_directory` })
  // Ticks when a silent device turns idle, or a processing-time trigger is due; stops on close.
  tickWhenDue(engine)
  return {
    engine,
    async close() {
      fleet.destroy()
      relay.destroy()
      await engine.close()
    },
  }
}
// #endregion engine

// #region components
const MINUTES = 'tumbling:60000'

/** One minute of one key: its value, how the engine knows it, and what it showed on time. */
function Minute({ result }: { result: WindowResult }): ReactNode {
  const history = useWindowHistory(result.window, result.key, result.start)
  // A minute first seen after it fired (a dashboard opened late) has no on-time pane.
  const onTime = history.find((pane) => pane.status === 'on_time')
  return (
    <li title={`${result.status}, revision ${result.revision}, basis ${result.basis}`}>
      {new Date(result.start).toLocaleTimeString()}: {result.mean.toFixed(1)}
      {result.status === 'provisional' && ' (so far)'}
      {onTime !== undefined && result.revision > 0 && <s> {onTime.mean.toFixed(1)}</s>}
    </li>
  )
}

/** Every live minute of one key; renders at most once per animation frame. */
function Series({ metric }: { metric: string }): ReactNode {
  const minutes = useWindows({ window: MINUTES, key: metric })
  return (
    <ul>
      {minutes.map((result) => (
        <Minute key={result.start} result={result} />
      ))}
    </ul>
  )
}

/** Connection and health: the sync status, the watermark, and what the engine counted. */
function Status(): ReactNode {
  const sync = useSyncStatus((status) => status.refusal ?? status.state)
  const watermark = useWatermark()
  const { corrections, finalityViolations } = useEngineStats((stats) => ({
    corrections: stats.corrections,
    finalityViolations: stats.finalityViolations,
  }))
  return (
    <p>
      {sync} · complete up to {Number.isFinite(watermark) ? new Date(watermark).toLocaleTimeString() : '–'} ·{' '}
      {corrections} corrections · {finalityViolations} changed after final
    </p>
  )
}
// #endregion components

// #region mount
export function mountDashboard(element: HTMLElement, relayUrl: string, token: RelayToken): () => Promise<void> {
  const dashboard = openDashboard(relayUrl, token)
  const root = createRoot(element)
  root.render(
    <EngineProvider engine={dashboard.engine}>
      <Status />
      <Series metric="temp" />
    </EngineProvider>,
  )
  return async () => {
    root.unmount()
    await dashboard.close()
  }
}
// #endregion mount
