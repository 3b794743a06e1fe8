import { memo, type ReactNode } from 'react'
import type { DeviceRow } from '../fleet/fleetSnapshot.ts'
import { settingsQuery } from '../fleet/fleetSettings.ts'
import { linkText } from './linkText.ts'
import { recoverySentence, recoveryShort } from './RecoveryText.tsx'
import { ago, byteSize, count } from './timeFormat.ts'
import { useFleet, useFleetControls } from './useFleet.ts'

type LinkState = 'online' | 'offline' | 'rebooting' | 'opening' | 'failed' | 'waiting'

function linkStateOf(row: DeviceRow): LinkState {
  const { host, status } = row
  if (host.state === 'connecting') return 'opening'
  if (host.state === 'failed') return 'failed'
  // Its host went away (a crash): the next one is starting and reopening the log.
  if (host.state === 'reconnecting') return 'rebooting'
  if (host.state === 'closed' || status?.phase === 'retired') return 'waiting'
  // Its host refused its boot, or answers a status that is not one: the reason is the pill's title.
  if (row.error !== null) return 'failed'
  if (status === null || status.phase === 'booting') return 'opening'
  return status.online ? 'online' : 'offline'
}

/** Where the device runs: its host worker (the same instance in every page that has it open). */
function hostText(row: DeviceRow): string {
  const { mode, instance, restarts } = row.host
  if (instance === '') return '—'
  return `${mode ?? ''} ${instance.slice(0, 8)}${restarts > 0 ? ` ↻${restarts}` : ''}${row.tab ? ' · tab' : ''}`
}

const PILL: Readonly<Record<LinkState, string>> = {
  online: 'pill-online',
  offline: 'pill-offline',
  rebooting: 'pill-rebooting',
  opening: 'pill-offline',
  failed: 'pill-rebooting',
  waiting: 'pill-late',
}

const DeviceTableRow = memo(function DeviceTableRow({
  row,
  now,
  tour,
  query,
}: {
  readonly row: DeviceRow
  /** Rounded to the second, so rows re-render once a second for "last heard". */
  readonly now: number
  readonly tour: boolean
  /** The fleet id and settings as URL parameters, for the device's own tab. */
  readonly query: string
}): ReactNode {
  const fleet = useFleetControls()
  const state = linkStateOf(row)
  const status = row.status
  const canAct = row.host.state === 'connected' && status !== null && status.phase === 'running'
  return (
    <tr className={`device-row device-${state}`}>
      <td className="mono strong">
        {row.id}
        {status !== null && status.source !== row.id && (
          <span className="muted" title={`${row.id} left the fleet earlier in this epoch and finished its source then; this run writes ${status.source}`}>
            {status.source.slice(row.id.length)}
          </span>
        )}
        {tour && <span className="tour-tag">tour</span>}
      </td>
      <td
        className="muted mono host-cell"
        data-host-instance={row.host.instance}
        title={`Its host worker (${row.host.mode ?? 'starting'} mode), instance ${row.host.instance || '—'}: the same worker in every page that has the device open${row.host.restarts > 0 ? `; restarted ${row.host.restarts} times since this page connected` : ''}${row.tab ? '; a ?device= tab has it open too' : ''}`}
      >
        {hostText(row)}
      </td>
      <td>
        <span className={`pill ${PILL[state]}`} title={row.error ?? status?.error ?? row.host.reason ?? undefined}>
          {state}
        </span>
      </td>
      <td
        className={status?.relayRefusal != null ? 'bad' : 'muted'}
        title="The device document's sync status in its room on the relay (syncStatusTracker(doc).status()), and the relay's refusal if it refused the device"
      >
        {status === null ? '—' : linkText(status)}
      </td>
      <td className={`mono num ${status !== null && status.pending > 0 ? 'warn' : 'muted'}`} title="Local document updates not yet acknowledged by every provider">
        {status === null ? '—' : count(status.pending)}
      </td>
      <td className="muted" title="When the dashboard's read-only copy of its room last synced">
        {ago(row.lastHeard, now)}
      </td>
      <td className="mono num">{status === null ? '—' : count(status.seq)}</td>
      <td className="mono num muted" title="its own engine: accepted / duplicates / rejected">
        {status === null ? '—' : `${count(status.accepted)}/${status.duplicates}/${status.rejected}`}
      </td>
      <td className="mono num muted" title="write-ahead log records since the last checkpoint, and their bytes">
        {status === null ? '—' : `${status.walRecords} · ${byteSize(status.walBytes)}`}
      </td>
      <td className={status?.recovery != null && status.recovery.lostEvents > 0 ? 'bad' : 'muted'} title={recoverySentence(status?.recovery ?? null)}>
        {recoveryShort(status?.recovery ?? null)}
      </td>
      <td>
        <div className="actions">
          <button
            type="button"
            className="btn btn-small"
            disabled={!canAct}
            onClick={() => fleet.setOnline(row.id, !status?.online)}
            aria-label={`${status?.online === false ? 'Reconnect' : 'Disconnect'} ${row.id}`}
          >
            {status?.online === false ? 'Reconnect' : 'Disconnect'}
          </button>
          <button
            type="button"
            className="btn btn-small btn-danger"
            disabled={!canAct}
            onClick={() => void fleet.crash(row.id)}
            aria-label={`Crash ${row.id}`}
            title="End the device's host worker without closing its engine; its pages start it again, and it reopens from its IndexedDB write-ahead log"
          >
            Crash
          </button>
          <a
            className="btn btn-small"
            href={`?device=${row.id}&${query}`}
            target="_blank"
            rel="noreferrer"
            aria-label={`Tab ↗ ${row.id}`}
            title="Open this device in its own tab: the tab shares its host worker">
            Tab ↗
          </a>
        </div>
      </td>
    </tr>
  )
})

/** Every device: where it runs, its links and sync status, seq, its own engine's counters, its log and last recovery. */
export function DeviceTable(): ReactNode {
  const devices = useFleet((s) => s.devices)
  const now = useFleet((s) => Math.floor(s.now / 1000) * 1000)
  const tourDevice = useFleet((s) => s.introDevice)
  const settings = useFleet((s) => s.settings)
  const fleetId = useFleet((s) => s.wiring.fleet)
  const query = `fleet=${fleetId}&${settingsQuery(settings)}`
  let online = 0
  let pending = 0
  let tabs = 0
  for (const row of devices) {
    if (linkStateOf(row) === 'online') online++
    pending += row.status?.pending ?? 0
    if (row.tab) tabs++
  }
  return (
    <section className="panel device-panel">
      <header className="panel-header">
        <h2>Devices</h2>
        <span className="panel-hint">each its own host worker, engine, Y.Doc and IndexedDB log · Crash ends the worker without close</span>
        <span className="muted">
          {online} of {devices.length} online{tabs > 0 ? ` · ${tabs} open in tabs too` : ''} · {count(pending)} updates pending
        </span>
      </header>
      <div className="table-scroll">
        <table className="table device-table">
          <thead>
            <tr>
              <th>Device</th>
              <th title="The device's host worker: mode and instance">Host</th>
              <th>Link</th>
              <th>Relay</th>
              <th className="num">Pending</th>
              <th>Last heard</th>
              <th className="num">Seq</th>
              <th className="num" title="The device's own engine: accepted / duplicates / rejected">
                Local a/d/r
              </th>
              <th className="num">WAL</th>
              <th>Recovery</th>
              <th>
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {devices.map((row) => (
              <DeviceTableRow key={row.id} row={row} now={now} tour={row.id === tourDevice} query={query} />
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}
