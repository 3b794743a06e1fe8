import type { EngineStats, SyncStatus } from '@tidemark/engine'
import { useEngineStats, useSyncStatus } from '@tidemark/react'
import type { ReactNode } from 'react'
import type { FollowedRooms } from '../fleet/dashboardLinks.ts'
import { REFILL_BOUND_MS } from '@tidemark/yjs'
import type { DeviceRow } from '../fleet/fleetSnapshot.ts'
import { DEVICE_RECONNECT_BOUND_MS, RELAY_RECONNECT } from '../fleet/relayReconnect.ts'
import { useFleet } from './useFleet.ts'
import { byteSize, clockTimeTenths, count, duration } from './timeFormat.ts'

interface Tile {
  readonly label: string
  readonly value: string
  readonly note?: string
  readonly tone?: 'good' | 'warn' | 'bad' | 'muted'
  readonly hint: string
}

/** What the devices' own engines and logs hold, summed over the rows that have a status. */
interface FleetTotals {
  readonly duplicates: number
  readonly rejected: number
  readonly walRecords: number
  readonly walBytes: number
  readonly docBytes: number
  readonly reporting: number
}

function totalsOf(rows: readonly DeviceRow[]): FleetTotals {
  const t = { duplicates: 0, rejected: 0, walRecords: 0, walBytes: 0, docBytes: 0, reporting: 0 }
  for (const row of rows) {
    const status = row.status
    if (status === null) continue
    t.reporting++
    t.duplicates += status.duplicates
    t.rejected += status.rejected
    t.walRecords += status.walRecords
    t.walBytes += status.walBytes
    t.docBytes += status.docBytes
  }
  return t
}

/**
 * The dashboard's link: on the relay, the dashboard engine's sync status (the fold of the
 * directory's and every followed room's `syncStatusTracker(doc).status()`, refusal included)
 * and the rooms it follows; without a relay, its tab channels.
 */
function linkTile(sync: SyncStatus, rooms: FollowedRooms | null, hasRelay: boolean): Tile {
  if (!hasRelay) {
    return { label: 'Sync', value: sync.state, note: 'tab channels only', tone: 'muted', hint: 'No relay: the dashboard follows each device over its tab channel (this browser only)' }
  }
  const refused = rooms?.refused ?? []
  const refusal = sync.refusal ?? refused[0]?.refusal ?? null
  const refill = rooms?.refill
  if (refusal === null && refill?.state === 'waiting' && refill.rooms > 0) {
    return {
      label: 'Relay',
      value: 'refilling',
      note: `${count(refill.synced)} of ${count(refill.rooms)} rooms synced`,
      tone: 'warn',
      hint: `A new dashboard engine merges nothing until every device room it follows has synced once, then all of them together (it stops waiting ${REFILL_BOUND_MS / 1000} s after the directory listed them, or after the first room synced if none had by then), so no window fires on part of the fleet`,
    }
  }
  const awaiting = rooms?.awaiting ?? []
  if (refusal === null && sync.state === 'connected' && awaiting.length > 0) {
    return {
      label: 'Relay',
      value: 'awaiting devices',
      note: `${awaiting.join(', ')} not heard again yet`,
      tone: 'warn',
      hint: `The dashboard's link came back, and so does every device's, each after its own reconnect delay (up to ${RELAY_RECONNECT.capMs / 1000} s): until a device is heard again, or ${DEVICE_RECONNECT_BOUND_MS / 1000} s passed, its silence is the outage's, so no device turns idle and windows wait for it`,
    }
  }
  return {
    label: 'Relay',
    value: refusal !== null ? 'refused' : sync.state,
    note: refusal !== null ? refusal : `${count(rooms?.rooms ?? 0)} rooms followed`,
    tone: refusal !== null ? 'bad' : sync.state === 'connected' ? 'good' : 'warn',
    hint:
      "The dashboard's read-only link to the relay: the fleet's directory room and every device room it lists, each a document bound read-only (the dashboard engine's syncStatus(), with the relay's refusal if it refused one)",
  }
}

function tilesOf(stats: EngineStats, totals: FleetTotals, now: number, windowMs: number, link: Tile): Tile[] {
  const behind = now - stats.watermark
  const proofLead = stats.proofFrontier - stats.watermark
  const peerAnomalies = stats.anomalies.invalid_remote_cell + stats.anomalies.source_conflict
  return [
    link,
    {
      label: 'Watermark',
      value: clockTimeTenths(stats.watermark),
      note: `${duration(behind)} behind now`,
      hint: 'Event time the dashboard engine considers complete: min over active devices (their replicated clocks) of max ts − out-of-orderness',
    },
    {
      label: 'Watermark lag',
      value: duration(stats.watermarkLag),
      hint: 'Largest event time seen minus the watermark',
    },
    {
      label: 'Proof frontier',
      value: Number.isFinite(stats.proofFrontier) ? `${proofLead >= 0 ? '+' : ''}${duration(proofLead)}` : 'none',
      note: !Number.isFinite(proofLead) ? 'nothing proven yet' : proofLead < -windowMs ? `held back by ${stats.proofHeldBy ?? 'a device'}` : 'vs watermark',
      tone: proofLead < -windowMs ? 'warn' : 'good',
      hint: 'P: every device delivered a gap-free seq up to here, so windows ending before it are proven complete; when it lags, the device whose clock holds it (stats().proofHeldBy)',
    },
    { label: 'Pending', value: count(stats.pending), hint: 'Readings in windows that have not fired yet' },
    { label: 'Open windows', value: count(stats.openWindows), note: `${count(stats.cells)} cells`, hint: 'Live windows and their per-device cells' },
    {
      label: 'Corrections',
      value: count(stats.corrections),
      tone: stats.corrections > 0 ? 'warn' : 'muted',
      hint: 'Fired windows re-emitted because a device\'s cells landed after they fired',
    },
    {
      label: 'Finality violations',
      value: count(stats.finalityViolations),
      tone: stats.finalityViolations > 0 ? 'bad' : 'good',
      note: 'merged anyway',
      hint: 'Replicated cells that changed a window already final here: merged anyway (convergence first) and counted',
    },
    {
      label: 'Invalid peer state',
      value: count(peerAnomalies),
      tone: peerAnomalies > 0 ? 'bad' : 'muted',
      hint: 'Peer cells or clocks the binding or engine refused (invalid_remote_cell, source_conflict)',
    },
    {
      label: 'Document',
      value: stats.docBytes === 0 ? '—' : byteSize(stats.docBytes),
      note: `devices ${byteSize(totals.docBytes)}`,
      tone: 'muted',
      hint: "Encoded size of the dashboard's documents (one read-only copy per device room) and the sum of the devices' own documents, measured every 5 s",
    },
    {
      label: 'Device WALs',
      value: `${count(totals.walRecords)} rec`,
      note: byteSize(totals.walBytes),
      tone: 'muted',
      hint: "The devices' IndexedDB write-ahead logs: records since each one's last checkpoint, and bytes",
    },
    {
      label: 'Duplicates',
      value: count(totals.duplicates),
      note: 'counted once',
      hint: "Re-sent readings the devices' own engines recognised (same device, seq) and ignored",
    },
    {
      label: 'Rejected',
      value: count(totals.rejected),
      note: 'malformed records',
      hint: "Invalid readings (NaN ts or value, missing id) the devices' own engines refused as anomalies",
    },
  ]
}

/** The dashboard engine's counters and frontiers (`useEngineStats`), and what the devices' engines and logs hold. */
export function StatsPanel(): ReactNode {
  const stats = useEngineStats()
  const now = useFleet((s) => s.now)
  const windowMs = useFleet((s) => s.settings.windowMs)
  const devices = useFleet((s) => s.devices)
  const rooms = useFleet((s) => s.relayRooms)
  const hasRelay = useFleet((s) => s.wiring.relay !== null)
  const sync = useSyncStatus()
  const totals = totalsOf(devices)
  return (
    <section className="panel stats-panel">
      <header className="panel-header">
        <h2>Dashboard engine</h2>
        <span className="muted">
          ingests nothing · {stats.sources} sources merged
        </span>
      </header>
      <div className="stat-grid">
        {tilesOf(stats, totals, now, windowMs, linkTile(sync, rooms, hasRelay)).map((tile) => (
          <div key={tile.label} className={`stat ${tile.tone ? `stat-${tile.tone}` : ''}`} title={tile.hint}>
            <span className="stat-label">{tile.label}</span>
            <span className="stat-value">{tile.value}</span>
            {tile.note !== undefined && <span className="stat-note">{tile.note}</span>}
          </div>
        ))}
      </div>
    </section>
  )
}
