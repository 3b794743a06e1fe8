import { useLateEvents } from '@tidemark/react'
import type { ReactNode } from 'react'
import { METRICS } from '../fleet/metrics.ts'
import { clockTime, clockTimeTenths, count } from './timeFormat.ts'

const SHOWN = 80

/** The late lane (`useLateEvents`): readings a final window refused, newest first, never counted. */
export function LateLaneTable(): ReactNode {
  const late = useLateEvents()
  const rows = late.slice(-SHOWN).reverse()
  // The same reading can be refused twice (a re-sent copy after its dedup entry was released).
  const seen = new Map<string, number>()
  const keyOf = (source: string, id: string, window: string | undefined): string => {
    const base = `${source}:${id}:${window ?? ''}`
    const repeat = seen.get(base) ?? 0
    seen.set(base, repeat + 1)
    return `${base}:${repeat}`
  }
  return (
    <section className="panel late-panel">
      <header className="panel-header">
        <h2>Late lane</h2>
        <span className="muted">{count(late.length)} readings arrived after their window was final</span>
      </header>
      {rows.length === 0 ? (
        <p className="empty">
          Nothing yet. Readings land here when a device comes back after longer than the allowed lateness.
        </p>
      ) : (
        <div className="table-scroll">
          <table className="table late-table">
            <thead>
              <tr>
                <th>Event time</th>
                <th>Device</th>
                <th className="num">Seq</th>
                <th>Key</th>
                <th className="num">Value</th>
                <th>Window</th>
                <th>Reason</th>
              </tr>
            </thead>
            <tbody>
              {rows.map(({ event, window, reason }) => {
                const metric = METRICS.find((m) => m.key === event.key)
                return (
                  <tr key={keyOf(event.source, event.id, window)}>
                    <td className="mono">{clockTimeTenths(event.ts)}</td>
                    <td className="mono strong">{event.source}</td>
                    <td className="mono num">{event.seq ?? '—'}</td>
                    <td>{event.key}</td>
                    <td className="mono num">
                      {metric === undefined ? event.value : event.value.toFixed(metric.digits)}
                      {metric !== undefined && <span className="unit"> {metric.unit}</span>}
                    </td>
                    <td className="mono muted">{window === undefined ? '—' : windowLabel(window, event.ts)}</td>
                    <td>
                      <span className="pill pill-late">{reason === 'beyond_lateness' ? 'too late' : reason.replaceAll('_', ' ')}</span>
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  )
}

/** Start of the tumbling window (by its id) that holds `ts`, `14:03:06`. */
function windowLabel(window: string, ts: number): string {
  const size = Number(window.split(':')[1])
  if (!Number.isFinite(size) || size <= 0) return window
  return clockTime(Math.floor(ts / size) * size)
}
