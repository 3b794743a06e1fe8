import { useWindows } from '@tidemark/react'

/** The dashboard side: every window's count, from all tabs, and their total. */
export function Dashboard() {
  const windows = useWindows()
  const total = windows.reduce((sum, window) => sum + window.count, 0)
  return (
    <section>
      <p>
        total <output data-testid="total">{total}</output> readings in {windows.length} windows
      </p>
      <ul>
        {windows.map((window) => (
          <li key={`${window.window}|${window.key}|${window.start}`}>
            {window.start}: {window.count} ({window.status})
          </li>
        ))}
      </ul>
    </section>
  )
}
