import { memo, type ReactNode } from 'react'
import type { DeviceStatus } from '../fleet/deviceStatus.ts'
import { ago, count, duration } from './timeFormat.ts'
import { useFleet, useFleetControls } from './useFleet.ts'

type LinkState = 'online' | 'offline' | 'rebooting'

function linkStateOf(device: DeviceStatus): LinkState {
  if (device.phase === 'rebooting') return 'rebooting'
  return device.online ? 'online' : 'offline'
}

const DeviceRow = memo(function DeviceRow({
  device,
  now,
  tour,
}: {
  readonly device: DeviceStatus
  /** Rounded to the second, so rows re-render once a second for "last sync". */
  readonly now: number
  readonly tour: boolean
}): ReactNode {
  const fleet = useFleetControls()
  const state = linkStateOf(device)
  return (
    <tr className={`device-row device-${state}`}>
      <td className="mono strong">
        {device.id}
        {tour && <span className="tour-tag">tour</span>}
      </td>
      <td>
        <span className={`pill pill-${state}`}>{state}</span>
      </td>
      <td className="mono num">
        {device.skewMs >= 0 ? '+' : ''}
        {duration(device.skewMs)}
      </td>
      <td className="mono num">{count(device.seq)}</td>
      <td className={`mono num ${device.queued > 0 ? 'warn' : 'muted'}`}>{count(device.queued)}</td>
      <td className="muted">{ago(device.lastSync, now)}</td>
      <td className="mono num muted" title="own engine: accepted / duplicates / rejected">
        {count(device.accepted)}/{device.duplicates}/{device.rejected}
      </td>
      <td className={device.lost > 0 ? 'bad' : 'muted'}>
        {device.lost > 0 ? (
          <>
            <span className="mono">{count(device.lost)}</span> <span className="no-wal">no WAL yet</span>
          </>
        ) : (
          '0'
        )}
      </td>
      <td>
        <div className="actions">
          <button
            type="button"
            className="btn btn-small"
            disabled={state === 'rebooting'}
            onClick={() => fleet.setOnline(device.id, !device.online)}
          >
            {device.online ? 'Disconnect' : 'Reconnect'}
          </button>
          <button
            type="button"
            className="btn btn-small btn-danger"
            disabled={state === 'rebooting'}
            onClick={() => fleet.crash(device.id)}
            title="Drop the device's engine and unsent readings, then reload it (no WAL yet: the queue is lost)"
          >
            Crash
          </button>
        </div>
      </td>
    </tr>
  )
})

/** Every device: link state, clock skew, seq, queue, last sync, its own engine's counters, crash losses. */
export function DeviceTable(): ReactNode {
  const devices = useFleet((s) => s.devices)
  const now = useFleet((s) => Math.floor(s.now / 1000) * 1000)
  const tourDevice = useFleet((s) => s.introDevice)
  let online = 0
  let queued = 0
  for (const device of devices) {
    if (device.online && device.phase === 'running') online++
    queued += device.queued
  }
  return (
    <section className="panel device-panel">
      <header className="panel-header">
        <h2>Devices</h2>
        <span className="panel-hint">each its own source and engine · Crash drops the engine and reloads it</span>
        <span className="muted">
          {online} of {devices.length} online · {count(queued)} readings queued
        </span>
      </header>
      <div className="table-scroll">
        <table className="table device-table">
          <thead>
            <tr>
              <th>Device</th>
              <th>Link</th>
              <th className="num">Skew</th>
              <th className="num">Seq</th>
              <th className="num">Queued</th>
              <th>Last sync</th>
              <th className="num" title="The device's own engine: accepted / duplicates / rejected">
                Local a/d/r
              </th>
              <th>Lost</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {devices.map((device) => (
              <DeviceRow key={device.id} device={device} now={now} tour={device.id === tourDevice} />
            ))}
          </tbody>
        </table>
      </div>
    </section>
  )
}
