import type { ReactNode } from 'react'
import { clockTime } from './timeFormat.ts'
import { useFleet } from './useFleet.ts'

/** What happened to the fleet, newest first: operator actions, the tour, and what each backlog did on landing. */
export function ActivityFeed(): ReactNode {
  const entries = useFleet((s) => s.activity)
  return (
    <section className="panel activity-panel">
      <header className="panel-header">
        <h2>Activity</h2>
      </header>
      {entries.length === 0 ? (
        <p className="empty">Quiet so far. Take a device offline, or start a reconnect storm.</p>
      ) : (
        <ol className="activity">
          {entries.map((entry) => (
            <li key={entry.id} className={`activity-${entry.tone}`}>
              <time className="mono muted">{clockTime(entry.at)}</time>
              <span>{entry.text}</span>
            </li>
          ))}
        </ol>
      )}
    </section>
  )
}
