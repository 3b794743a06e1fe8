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
 * One device as its host reports it (the `status` command): plain data, so it crosses from the
 * worker to every page that shows the device.
 */
export interface DeviceStatus {
  readonly id: string
  /** The source this run of the device writes: its id, or `<id>~n` once it left the fleet (its source finished) and runs again in the same epoch. */
  readonly source: string
  readonly epoch: string
  /**
   * `booting`: the host opened the log and waits for a page to boot it (its switches);
   * `running`: sampling (unless paused) and linked (when online); `retired`: stopped for good
   * (its epoch ended, or it left the fleet).
   */
  readonly phase: 'booting' | 'running' | 'retired'
  /** Its links are meant to be up (the operator's switch). */
  readonly online: boolean
  readonly offlineSince: number | null
  /** Its producer is paused: it samples nothing. */
  readonly paused: boolean
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
  /** Readings its own engine accepted since this host opened it. */
  readonly accepted: number
  readonly duplicates: number
  readonly rejected: number
  /** Accepted readings whose batch is committed to the write-ahead log. */
  readonly durable: number
  /** Readings accepted since the device went offline. */
  readonly offlineReadings: number
  readonly walRecords: number
  readonly walBytes: number
  readonly docBytes: number
  readonly recovery: RecoveryNote | null
  readonly error: string | null
}

/**
 * What a retire did with the device's source and its document (the `retire` command's answer).
 *
 * - `finished`: its source is finished in its log (it left the fleet: `engine.finishSource`).
 * - `relay`: its room on the relay when the links closed: `acknowledged` (the relay holds every
 *   update of the document, the last upload and the finish included), `offline` (its link was
 *   switched off, or never came up: they stay in its log alone), `unacknowledged` (not
 *   acknowledged within `RETIRE_ACK_MS`, or the relay refused the document); null without a relay.
 */
export interface RetireReply {
  readonly finished: boolean
  readonly relay: 'acknowledged' | 'offline' | 'unacknowledged' | null
}

/**
 * How long a retire waits for the relay to acknowledge the device's last updates, ms: a round
 * trip when the room is in sync, and a reconnect's chance when the socket is just coming back.
 */
export const RETIRE_ACK_MS = 3_000

/**
 * Field by field; `recovery` by its time (a structured clone makes a new object of the same note).
 *
 * @example
 * if (!sameStatus(shown, next)) shown = next // an unchanged row keeps its identity and does not render
 */
export function sameStatus(a: DeviceStatus, b: DeviceStatus): boolean {
  for (const field of Object.keys(b) as (keyof DeviceStatus)[]) {
    if (field === 'recovery') {
      if (a.recovery?.at !== b.recovery?.at) return false
    } else if (a[field] !== b[field]) return false
  }
  return true
}

const PHASES = new Set(['booting', 'running', 'retired'])

/**
 * A status a host answered, checked before a page shows it: an object for device `id` with a
 * known phase, or a TypeError saying what came instead.
 *
 * @example
 * const status = parseStatus(await engine.command('status'), 'd07')
 */
export function parseStatus(value: unknown, id: string): DeviceStatus {
  if (typeof value !== 'object' || value === null) throw new TypeError(`${id}'s host answered a status that is not an object: ${String(value)}`)
  const status = value as Partial<DeviceStatus>
  if (status.id !== id) throw new TypeError(`${id}'s host answered the status of ${String(status.id)}`)
  if (typeof status.phase !== 'string' || !PHASES.has(status.phase)) throw new TypeError(`${id}'s host answered an unknown phase ${String(status.phase)}`)
  return value as DeviceStatus
}
