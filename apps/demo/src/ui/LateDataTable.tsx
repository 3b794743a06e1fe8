import { useLateEvents } from '@tidemark/react'
import type { ReactNode } from 'react'
import { METRICS } from '../fleet/metrics.ts'
import { clockTime, count } from './timeFormat.ts'
import { useFleet } from './useFleet.ts'

/**
 * Windows that changed after they fired, newest first: a device's cells landed late (it
 * was offline, or its tab was closed). Within the allowed lateness that is a correction;
 * after a window is final, the dashboard merges the cells anyway (replicas must converge)
 * and counts a finality violation. The dashboard's late lane (`useLateEvents`) would hold
 * readings it refused, but it ingests none itself: merged state is never refused.
 */
export function LateDataTable(): ReactNode {
  const rows = useFleet((s) => s.lateCorrections)
  const lateLane = useLateEvents((events) => events.length)
  const afterFinal = rows.reduce((n, row) => n + (row.afterFinal ? 1 : 0), 0)
  return (
    <section className="panel late-panel">
      <header className="panel-header">
        <h2>Late data</h2>
        <span className="muted">
          {count(rows.length)} late corrections shown · {afterFinal} after final · late lane {count(lateLane)}
        </span>
      </header>
      {rows.length === 0 ? (
        <p className="empty">
          Nothing yet. Windows land here when a device's state arrives after they fired: take a device offline for a few
          seconds, then reconnect it. Stay away longer than the allowed lateness to see windows change after final.
        </p>
      ) : (
        <div className="table-scroll">
          <table className="table late-table">
            <thead>
              <tr>
                <th>Landed</th>
                <th>Window</th>
                <th>Key</th>
                <th className="num">Was</th>
                <th className="num">Now</th>
                <th className="num">Rev</th>
                <th>Kind</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => {
                const metric = METRICS.find((m) => m.key === row.key)
                const digits = metric?.digits ?? 2
                return (
                  <tr key={`${row.key}:${row.start}:${row.revision}`}>
                    <td className="mono">{clockTime(row.at)}</td>
                    <td className="mono">{clockTime(row.start)}</td>
                    <td>{row.key}</td>
                    <td className="mono num muted">{row.previousMean === null ? '—' : row.previousMean.toFixed(digits)}</td>
                    <td className="mono num">
                      {row.mean.toFixed(digits)}
                      {metric !== undefined && <span className="unit"> {metric.unit}</span>}
                    </td>
                    <td className="mono num">r{row.revision}</td>
                    <td>
                      {row.afterFinal ? (
                        <span className="pill pill-late" title="The window was final here: merged anyway, counted as a finality violation">
                          after final
                        </span>
                      ) : (
                        <span className="pill pill-offline" title="Within the allowed lateness: a correction">
                          correction
                        </span>
                      )}
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
