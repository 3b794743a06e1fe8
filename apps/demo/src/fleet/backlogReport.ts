import type { ActivityTone } from './activityLog.ts'
import type { Delivery } from './link.ts'

/** One activity line. */
export interface Report {
  readonly tone: ActivityTone
  readonly text: string
}

/** What the dashboard engine made of one reconnecting device's backlog. */
export function describeBacklog(delivery: Delivery): Report {
  const r = delivery.receipt
  const parts = [`${r.accepted} accepted`]
  if (r.late > 0) parts.push(`${r.late} of them late (windows corrected)`)
  if (r.beyondLateness > 0) parts.push(`${r.beyondLateness} beyond lateness (late lane)`)
  if (r.duplicates > 0) parts.push(`${r.duplicates} duplicates`)
  if (r.rejected > 0) parts.push(`${r.rejected} rejected`)
  return {
    tone: r.beyondLateness > 0 ? 'warn' : 'good',
    text: `${delivery.source} backlog of ${delivery.events} landed: ${parts.join(', ')}`,
  }
}

/** The backlogs of a reconnect storm, summed, so the feed gets one line at its end instead of one per upload. */
export class StormTally {
  #backlogs = 0
  #events = 0
  #late = 0
  #beyond = 0
  #duplicates = 0

  add(delivery: Delivery): void {
    this.#backlogs++
    this.#events += delivery.events
    this.#late += delivery.receipt.late
    this.#beyond += delivery.receipt.beyondLateness
    this.#duplicates += delivery.receipt.duplicates
  }

  report(): Report {
    return {
      tone: this.#beyond > 0 ? 'warn' : 'good',
      text: `Reconnect storm over, every device back online. ${this.#backlogs} backlogs landed with ${this.#events} readings: ${this.#late} late (windows corrected), ${this.#beyond} beyond lateness, ${this.#duplicates} duplicates counted once.`,
    }
  }
}
