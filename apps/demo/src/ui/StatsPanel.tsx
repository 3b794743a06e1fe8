import type { EngineStats } from '@tidemark/engine'
import { useEngineStats } from '@tidemark/react'
import type { ReactNode } from 'react'
import { useFleet } from './useFleet.ts'
import { byteSize, clockTimeTenths, count, duration } from './timeFormat.ts'

interface Tile {
  readonly label: string
  readonly value: string
  readonly note?: string
  readonly tone?: 'good' | 'warn' | 'bad' | 'muted'
  readonly hint: string
}

const REJECTED_REASONS = new Set(['duplicate', 'beyond_lateness'])

function rejectedOf(stats: EngineStats): number {
  let n = 0
  for (const [reason, times] of Object.entries(stats.anomalies)) if (!REJECTED_REASONS.has(reason)) n += times
  return n
}

function tilesOf(stats: EngineStats, now: number, windowMs: number): Tile[] {
  const behind = now - stats.watermark
  const proofLead = stats.proofFrontier - stats.watermark
  return [
    {
      label: 'Watermark',
      value: clockTimeTenths(stats.watermark),
      note: `${duration(behind)} behind now`,
      hint: 'Event time the dashboard engine considers complete (min over active devices of max ts − out-of-orderness)',
    },
    {
      label: 'Watermark lag',
      value: duration(stats.watermarkLag),
      hint: 'Largest event time seen minus the watermark',
    },
    {
      label: 'Proof frontier',
      value: Number.isFinite(stats.proofFrontier) ? `${proofLead >= 0 ? '+' : ''}${duration(proofLead)}` : 'none',
      note: !Number.isFinite(proofLead) ? 'nothing proven yet' : proofLead < -windowMs ? 'held back by a device' : 'vs watermark',
      tone: proofLead < -windowMs ? 'warn' : 'good',
      hint: 'P: every device delivered a gap-free seq up to here, so windows ending before it are proven complete',
    },
    { label: 'Pending', value: count(stats.pending), hint: 'Readings in windows that have not fired yet' },
    { label: 'Open windows', value: count(stats.openWindows), note: `${count(stats.cells)} cells`, hint: 'Live windows and their per-device cells' },
    {
      label: 'Corrections',
      value: count(stats.corrections),
      note: `${count(stats.lateAdmitted)} late readings`,
      tone: stats.corrections > 0 ? 'warn' : 'muted',
      hint: 'Fired windows re-emitted because late readings landed within the allowed lateness',
    },
    {
      label: 'Beyond lateness',
      value: count(stats.beyondLateness),
      note: 'on the late lane',
      tone: stats.beyondLateness > 0 ? 'bad' : 'muted',
      hint: 'Readings for windows that were already final; kept on the late lane, never counted',
    },
    {
      label: 'Duplicates',
      value: count(stats.duplicates),
      note: 'counted once',
      hint: 'Same (device, seq) seen again; ignored',
    },
    {
      label: 'Rejected',
      value: count(rejectedOf(stats)),
      note: 'malformed records',
      hint: 'Invalid readings (NaN ts or value, missing id), reported as anomalies',
    },
    {
      label: 'Finality violations',
      value: count(stats.finalityViolations),
      tone: stats.finalityViolations > 0 ? 'bad' : 'good',
      hint: 'Replicated state that arrived for a window already final here (needs Yjs replication)',
    },
    {
      label: 'Document',
      value: stats.docBytes === 0 ? '—' : byteSize(stats.docBytes),
      note: stats.docBytes === 0 ? 'Yjs doc not wired yet' : 'encoded Y.Doc',
      tone: 'muted',
      hint: 'Encoded size of the lattice state in its Y.Doc',
    },
    {
      label: 'Write-ahead log',
      value: stats.walRecords === 0 ? '—' : `${count(stats.walRecords)} rec`,
      note: stats.walRecords === 0 ? 'no WAL yet' : byteSize(stats.walBytes),
      tone: 'muted',
      hint: 'IndexedDB write-ahead log records and bytes',
    },
  ]
}

/** The dashboard engine's counters and frontiers (`useEngineStats`). */
export function StatsPanel(): ReactNode {
  const stats = useEngineStats()
  const now = useFleet((s) => s.now)
  const windowMs = useFleet((s) => s.settings.windowMs)
  return (
    <section className="panel stats-panel">
      <header className="panel-header">
        <h2>Dashboard engine</h2>
        <span className="muted">
          {count(stats.ingested)} ingested · {stats.sources} sources
        </span>
      </header>
      <div className="stat-grid">
        {tilesOf(stats, now, windowMs).map((tile) => (
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
