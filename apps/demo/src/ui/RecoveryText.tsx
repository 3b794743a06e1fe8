import type { ReactNode } from 'react'
import type { RecoveryNote } from '../fleet/deviceStatus.ts'
import { clockTime, count } from './timeFormat.ts'

/** What the last `openEngine` recovered (`recoveryReport`), in one sentence. */
export function recoverySentence(recovery: RecoveryNote | null): string {
  if (recovery === null) return 'Not opened yet.'
  if (isFresh(recovery)) return `Opened ${clockTime(recovery.at)} on an empty write-ahead log.`
  const lost = recovery.lossUnknown ? 'loss unknown (damaged checkpoint)' : `${count(recovery.lostEvents)} lost`
  const checkpoint = recovery.checkpointLsn === null ? 'no checkpoint' : `checkpoint at lsn ${recovery.checkpointLsn}`
  return `Recovered ${clockTime(recovery.at)} in ${recovery.durationMs} ms: ${checkpoint} + ${count(recovery.replayedRecords)} log records (${count(recovery.replayedEvents)} events) replayed, ${lost}; ${count(recovery.recoveredReadings)} readings held, continues after seq ${count(recovery.resumedAfterSeq)}.`
}

/** The short form for a table cell: readings held after recovery and what was lost. */
export function recoveryShort(recovery: RecoveryNote | null): string {
  if (recovery === null || isFresh(recovery)) return '—'
  return `${count(recovery.recoveredReadings)} held · ${recovery.lossUnknown ? '? lost' : `${recovery.lostEvents} lost`}`
}

export function RecoveryText({ recovery }: { readonly recovery: RecoveryNote | null }): ReactNode {
  const lossy = recovery !== null && (recovery.lostEvents > 0 || recovery.lossUnknown)
  return <span className={lossy ? 'bad' : recovery === null || isFresh(recovery) ? 'muted' : ''}>{recoverySentence(recovery)}</span>
}

function isFresh(recovery: RecoveryNote): boolean {
  return recovery.checkpointLsn === null && recovery.replayedRecords === 0 && recovery.recoveredReadings === 0
}
