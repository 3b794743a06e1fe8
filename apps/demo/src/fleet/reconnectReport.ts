import type { WindowChange } from '@tidemark/engine'
import type { ActivityTone } from './activityLog.ts'

/** One activity line. */
export interface Report {
  readonly tone: ActivityTone
  readonly text: string
}

/** A fired window that changed because replicated state landed late, as the late-data table lists it. */
export interface LateCorrection {
  readonly at: number
  readonly key: string
  readonly start: number
  readonly previousMean: number | null
  readonly mean: number
  readonly revision: number
  /** The window was already final here: the engine merged the state anyway and counted a finality violation. */
  readonly afterFinal: boolean
}

/** How long after a storm's last toggle its corrections are still counted. */
export const RECONNECT_SETTLE_MS = 2_000
/** How long after a device caught up the dashboard's corrections are still credited to its reconnect. */
const CAUGHT_UP_SETTLE_MS = 1_000
/** A reconnect not caught up by then is reported as such. */
const CATCH_UP_LIMIT_MS = 20_000

/**
 * What the dashboard did after one device came back: the windows its backlog corrected,
 * and how many of those were already final. Corrections are counted from the dashboard
 * engine's change feed (so they are what the charts show) from the reconnect until a
 * second after the device caught up: its link acknowledged every update and the
 * dashboard's copy of its document heard from it. A device in another tab may take a
 * while to get the command; the watch waits up to 20 s.
 */
export class ReconnectWatch {
  readonly device: string
  readonly at: number
  readonly offlineMs: number
  readonly readings: number
  corrections = 0
  afterFinal = 0
  #caughtUpAt: number | null = null

  /** `readings`: what the device accepted while offline (null when its page did not say). */
  constructor(device: string, at: number, offlineMs: number, readings: number) {
    this.device = device
    this.at = at
    this.offlineMs = offlineMs
    this.readings = readings
  }

  /** Notes the first time the device was seen caught up. */
  caughtUp(now: number): void {
    this.#caughtUpAt ??= now
  }

  /** Time to report: settled after catching up, or past the limit. */
  due(now: number): boolean {
    return (this.#caughtUpAt !== null && now - this.#caughtUpAt >= CAUGHT_UP_SETTLE_MS) || now - this.at >= CATCH_UP_LIMIT_MS
  }

  count(change: WindowChange): void {
    if (change.type !== 'correction') return
    this.corrections++
    if (wasFinal(change)) this.afterFinal++
  }

  report(): Report {
    const away = `after ${Math.round(this.offlineMs / 1000)} s offline`
    if (this.#caughtUpAt === null) {
      return {
        tone: 'warn',
        text: `${this.device} back ${away}, but not caught up within ${CATCH_UP_LIMIT_MS / 1000} s; ${this.corrections} window corrections so far`,
      }
    }
    const synced = `${this.readings} readings it took offline reached the dashboard through its document`
    if (this.corrections === 0) {
      return { tone: 'info', text: `${this.device} back ${away}: ${synced}; no fired window needed a correction` }
    }
    const final = this.afterFinal > 0 ? `, ${this.afterFinal} of them already final (finality violations, merged anyway)` : ''
    return {
      tone: this.afterFinal > 0 ? 'warn' : 'good',
      text: `${this.device} back ${away}: ${synced}; ${this.corrections} window corrections${final}`,
    }
  }
}

/** The corrections of a whole reconnect storm, reported in one line at its end instead of one per reconnect. */
export class StormTally {
  #reconnects = 0
  #corrections = 0
  #afterFinal = 0

  reconnected(): void {
    this.#reconnects++
  }

  count(change: WindowChange): void {
    if (change.type !== 'correction') return
    this.#corrections++
    if (wasFinal(change)) this.#afterFinal++
  }

  report(): Report {
    const final = this.#afterFinal > 0 ? ` (${this.#afterFinal} after final: finality violations, merged anyway)` : ''
    return {
      tone: this.#afterFinal > 0 ? 'warn' : 'good',
      text: `Reconnect storm over, every device back online. ${this.#reconnects} reconnects caught up by state-vector exchange; ${this.#corrections} window corrections${final}.`,
    }
  }
}

/**
 * The late corrections in `changes`, with the value each replaced.
 *
 * @example
 * engine.subscribe((changes) => log.push(...lateCorrectionsOf(changes, Date.now())))
 */
export function lateCorrectionsOf(changes: readonly WindowChange[], at: number): LateCorrection[] {
  const out: LateCorrection[] = []
  for (const change of changes) {
    if (change.type !== 'correction') continue
    const { result, previous } = change
    out.push({
      at,
      key: result.key,
      start: result.start,
      previousMean: previous === undefined ? null : previous.mean,
      mean: result.mean,
      revision: result.revision,
      afterFinal: wasFinal(change),
    })
  }
  return out
}

/** A correction of a window that was already final: what the engine counts as a finality violation. */
export function wasFinal(change: WindowChange): boolean {
  return change.previous?.final === true
}
