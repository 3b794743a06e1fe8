import { type ReactNode, useSyncExternalStore } from 'react'
import type { DeviceStatus } from '../fleet/deviceStatus.ts'
import type { DeviceTab } from '../fleet/deviceTab.ts'
import type { FleetWiring } from '../fleet/fleetWiring.ts'
import { linkText } from './linkText.ts'
import { RecoveryText } from './RecoveryText.tsx'
import { ago, byteSize, count, duration } from './timeFormat.ts'

/**
 * A `?device=` tab: one device on its own page. The device runs in its host worker, the same
 * one the dashboard reaches (the same instance id on both pages); this page shows its status and
 * sends it commands. Its readings reach the dashboards only through its document's link.
 */
export function DevicePage({ tab, wiring }: { readonly tab: DeviceTab; readonly wiring: FleetWiring }): ReactNode {
  const snapshot = useSyncExternalStore(tab.subscribe, tab.snapshot)
  const { id, status, host, now, epoch, error } = snapshot
  const running = host.state === 'connected' && status !== null && status.phase !== 'booting'
  return (
    <div className="app device-page">
      <header className="app-header">
        <div className="brand">
          <div>
            <h1>
              Tidemark <span className="brand-sub">device {id}</span>
            </h1>
            <p className="tagline">
              Device {id} runs in its host worker, with its own engine, Y.Doc and IndexedDB write-ahead log: this tab and the
              dashboard reach the same worker. Dashboards see its readings only through its document, in its own room on the
              relay with a token for that room alone.
            </p>
          </div>
        </div>
        <div className="header-status">
          <span className="chip">
            <span className="chip-label">Fleet</span> <span className="mono">{wiring.fleet}</span>
          </span>
          <span className="chip">
            <span className="chip-label">Epoch</span> <span className="mono">{epoch}</span>
          </span>
          <span
            className="chip host-chip"
            data-host-instance={host.instance}
            title={`The device's host worker (${host.mode ?? 'starting'} mode), instance ${host.instance || '—'}, ${host.state}${host.reason === null ? '' : `: ${host.reason}`}`}
          >
            <span className="chip-label">Host</span> {host.mode ?? host.state} <span className="mono">{host.instance === '' ? '—' : host.instance.slice(0, 8)}</span>
          </span>
          <span className="chip">
            <span className="chip-label">Link</span> {wiring.relay === null ? 'BroadcastChannel only' : <span className="mono">{wiring.relay.url}</span>}
          </span>
        </div>
      </header>
      {wiring.relayNotice !== null && <p className="notice">{wiring.relayNotice}</p>}
      {error !== null && <p className="notice">{error}</p>}
      {!running ? (
        <section className="panel">
          <p className="empty">
            {host.state === 'failed'
              ? `${id}'s host could not start: ${host.reason ?? 'no reason given'}`
              : host.state === 'reconnecting'
                ? `${id}'s host went away; the next one is reopening its write-ahead log…`
                : `Starting ${id}'s host worker and opening its write-ahead log…`}
          </p>
        </section>
      ) : (
        <DevicePanel tab={tab} status={status} restarts={host.restarts} now={now} />
      )}
    </div>
  )
}

function DevicePanel({
  tab,
  status,
  restarts,
  now,
}: {
  readonly tab: DeviceTab
  readonly status: DeviceStatus
  readonly restarts: number
  readonly now: number
}): ReactNode {
  const state = status.phase === 'running' ? (status.online ? 'online' : 'offline') : status.phase
  const paused = status.paused
  const facts: [string, string, string][] = [
    ['Sync', linkText(status), "its room on the relay (the document's sync status there, with the relay's refusal), or its tab channel"],
    ['Pending', count(status.pending), 'document updates not yet acknowledged by every provider'],
    ['Last sync', ago(status.lastSync, now), 'when a provider last completed a sync exchange or received a peer update; uploads to an already synced peer do not move it'],
    ['Source', status.source, status.source === status.id ? 'the source its readings are of: the device' : 'it left the fleet earlier in this epoch and finished its source then: this run writes the next one'],
    ['Seq', count(status.seq), 'last seq stamped on a reading'],
    ['Clock skew', `${status.skewMs >= 0 ? '+' : ''}${duration(status.skewMs)}`, 'device clock minus true time'],
    ['Accepted', count(status.accepted), 'readings its engine accepted since this host opened it'],
    ['Durable', count(status.durable), 'accepted readings committed to the write-ahead log'],
    ['Duplicates / rejected', `${count(status.duplicates)} / ${count(status.rejected)}`, 're-sent readings counted once; malformed records'],
    ['Taken offline', count(status.offlineReadings), 'readings accepted since the links went down'],
    ['Write-ahead log', `${count(status.walRecords)} rec · ${byteSize(status.walBytes)}`, 'IndexedDB records since the last checkpoint'],
    ['Document', status.docBytes === 0 ? '—' : byteSize(status.docBytes), 'encoded Y.Doc (measured every 5 s)'],
    ['Host restarts', count(restarts), 'hosts this tab moved to after its first: one per crash'],
  ]
  const running = status.phase === 'running'
  return (
    <>
      <div className="control-bar">
        <div className="control-group">
          <span className={`pill pill-${state === 'online' ? 'online' : state === 'offline' ? 'offline' : 'rebooting'}`}>{state}</span>
          <button type="button" className="btn" disabled={!running} onClick={() => void tab.command(status.online ? 'offline' : 'online')}>
            {status.online ? 'Disconnect' : 'Reconnect'}
          </button>
          <button type="button" className="btn btn-danger" disabled={!running} onClick={() => void tab.command('crash')} title="End the host worker without closing its engine">
            Crash
          </button>
          <button type="button" className="btn" onClick={() => location.reload()} title="Reload this tab: the device runs on in its host worker while another page has it open">
            Reload tab
          </button>
          <button type="button" className={`btn ${paused ? 'btn-primary' : ''}`} disabled={!running} onClick={() => void tab.command(paused ? 'resume' : 'pause')}>
            {paused ? 'Resume producer' : 'Pause producer'}
          </button>
        </div>
      </div>
      <section className="panel stats-panel">
        <header className="panel-header">
          <h2>Device {status.id}</h2>
          <span className="muted">{status.error ?? 'no errors'}</span>
        </header>
        <div className="stat-grid">
          {facts.map(([label, value, hint]) => (
            <div key={label} className="stat" title={hint}>
              <span className="stat-label">{label}</span>
              <span className="stat-value">{value}</span>
            </div>
          ))}
        </div>
        <p className="recovery-line">
          <RecoveryText recovery={status.recovery} />
        </p>
      </section>
    </>
  )
}
