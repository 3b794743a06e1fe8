import type { SyncStatus } from '@tidemark/engine'

/** What `openEngine` recovered the last time the device opened (`recoveryReport`). */
export interface RecoveryNote {
  readonly at: number
  readonly checkpointLsn: number | null
  readonly replayedRecords: number
  readonly replayedEvents: number
  /** Events lost with corrupt log records. */
  readonly lostEvents: number
  readonly lossUnknown: boolean
  readonly durationMs: number
  /** Readings the recovered engine holds (`stats().applied`). */
  readonly recoveredReadings: number
  /** The seq the log had reached; the device continues after it. */
  readonly resumedAfterSeq: number
}

/**
 * One device as every table shows it, wherever it runs: plain data, so a `?device=` tab
 * can post it to the dashboards over the control channel.
 */
export interface DeviceStatus {
  readonly id: string
  readonly epoch: string
  /** `failed`: its write-ahead log could not be opened (`error` says why). */
  readonly phase: 'opening' | 'running' | 'rebooting' | 'closed' | 'failed'
  /** Its links are meant to be up (the operator's switch). */
  readonly online: boolean
  readonly offlineSince: number | null
  /** The device engine's `syncStatus()`: what its link reports. */
  readonly syncState: SyncStatus['state']
  /** Local document updates not yet acknowledged by every provider. */
  readonly pending: number
  readonly lastSync: number | null
  /** Its room on the relay: the document's sync status there (null when the fleet has no relay). */
  readonly relayState: SyncStatus['state'] | null
  /** Why the relay refused its document (`tidemark:…`), or null. */
  readonly relayRefusal: string | null
  readonly skewMs: number
  readonly seq: number
  /** Readings its own engine accepted (this page's run of the device). */
  readonly accepted: number
  readonly duplicates: number
  readonly rejected: number
  /** Accepted readings whose batch is committed to the write-ahead log. */
  readonly durable: number
  /** Readings sampled but never ingested when the device crashed: never acknowledged. */
  readonly lostUnacked: number
  readonly crashes: number
  /** Readings accepted since the device went offline. */
  readonly offlineReadings: number
  readonly walRecords: number
  readonly walBytes: number
  readonly docBytes: number
  readonly recovery: RecoveryNote | null
  readonly error: string | null
}

/** Field by field; `recovery` by identity (a new note is a new object). */
export function sameStatus(a: DeviceStatus, b: DeviceStatus): boolean {
  for (const field of Object.keys(b) as (keyof DeviceStatus)[]) {
    if (a[field] !== b[field]) return false
  }
  return true
}
