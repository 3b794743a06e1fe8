import { createEngine, distinct, quantiles, tumbling } from '@tidemark/engine'
import { EngineProvider, windowHooks } from '@tidemark/react'
import type { ReactNode } from 'react'
import { createRoot } from 'react-dom/client'

// #region engine
/** Request latencies per minute: three quantiles of one sketch, and how many devices reported. */
export const aggregates = {
  latency: quantiles({ at: [0.5, 0.95, 0.99], relativeAccuracy: 0.01 }),
  devices: distinct({ of: (event) => event.source }),
}

export const engine = createEngine({ windows: tumbling(60_000), allowedLateness: 120_000, aggregates })
// #endregion engine

// #region chart
/** The window hooks, typed for these aggregates: `r.aggregates.latency` is a `number[]`. */
const { useWindows } = windowHooks<typeof aggregates>()

const LINES = [
  { name: 'p50', at: 0, color: '#2a9d8f' },
  { name: 'p95', at: 1, color: '#e9c46a' },
  { name: 'p99', at: 2, color: '#e76f51' },
] as const

/** p50, p95 and p99 of `key`'s latency per minute, one polyline each; a corrected minute redraws in place. */
export function QuantileChart({ keyName, width = 600, height = 200 }: { keyName: string; width?: number; height?: number }): ReactNode {
  const minutes = useWindows({ window: 'tumbling:60000', key: keyName }, (rows) =>
    rows.filter((r) => r.aggregates.latency.length > 0).map((r) => ({ start: r.start, latency: r.aggregates.latency, devices: r.aggregates.devices })),
  )
  if (minutes.length === 0) return <p>No latencies yet</p>
  const top = Math.max(...minutes.map((m) => m.latency[2] ?? 0), 1)
  const x = (i: number) => (minutes.length === 1 ? width / 2 : (i / (minutes.length - 1)) * width)
  const y = (ms: number) => height - (ms / top) * height
  return (
    <svg width={width} height={height} role="img" aria-label={`latency quantiles of ${keyName} per minute`}>
      {LINES.map((line) => (
        <polyline
          key={line.name}
          fill="none"
          stroke={line.color}
          points={minutes.map((m, i) => `${x(i)},${y(m.latency[line.at] ?? 0)}`).join(' ')}
        >
          <title>{line.name}</title>
        </polyline>
      ))}
      {minutes.map((m, i) => (
        <circle key={m.start} cx={x(i)} cy={y(m.latency[2] ?? 0)} r={2}>
          <title>{`${new Date(m.start).toLocaleTimeString()}: p99 ${(m.latency[2] ?? 0).toFixed(1)} ms from ${m.devices} devices`}</title>
        </circle>
      ))}
    </svg>
  )
}
// #endregion chart

// #region mount
export function mount(element: HTMLElement): void {
  createRoot(element).render(
    <EngineProvider engine={engine}>
      <QuantileChart keyName="api" />
    </EngineProvider>,
  )
}
// #endregion mount
