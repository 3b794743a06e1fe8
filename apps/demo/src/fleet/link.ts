import type { Engine, IngestReceipt, StreamEvent } from '@tidemark/engine'

/**
 * The device → dashboard link, the one place that decides how a device's
 * data reaches the dashboard engine.
 *
 * Today it forwards each batch a device ingested, after a network delay, when
 * the device is online, and queues batches while it is offline; on reconnect
 * the queue goes up as one backlog upload. The queue lives in memory: a crash
 * loses it (there is no write-ahead log yet). When Yjs replication lands this
 * module is replaced by syncing the device's document, with the same surface
 * for the rest of the demo: `send`, `setOnline`, `deliverDue`, `status`.
 */

/** Where delivered batches go: the dashboard engine, or a fake in tests. */
export type LinkTarget = Pick<Engine, 'ingest'>

/** One upload that reached the dashboard, with what the dashboard engine made of it. */
export interface Delivery {
  readonly source: string
  readonly events: number
  /** True for the upload that carried a reconnecting device's queue. */
  readonly backlog: boolean
  readonly receipt: IngestReceipt
}

export interface LinkStatus {
  readonly online: boolean
  /** Events waiting on the device for the link to come back. */
  readonly queued: number
  /** Events sent and not yet landed. */
  readonly inFlight: number
  /** Processing time the last upload landed, or null. */
  readonly lastSync: number | null
  readonly delivered: number
}

interface Upload {
  readonly at: number
  readonly events: readonly StreamEvent[]
  readonly backlog: boolean
}

export class DeviceLink {
  readonly source: string
  readonly #target: LinkTarget
  readonly #latencyMs: () => number
  #online = true
  #queue: (readonly StreamEvent[])[] = []
  #queued = 0
  #inFlight: Upload[] = []
  #lastSync: number | null = null
  #delivered = 0

  /** `latencyMs` draws the network delay of one upload. */
  constructor(source: string, target: LinkTarget, latencyMs: () => number) {
    this.source = source
    this.#target = target
    this.#latencyMs = latencyMs
  }

  get online(): boolean {
    return this.#online
  }

  /** Hands over a batch the device just ingested: sent when online, queued when offline. */
  send(events: readonly StreamEvent[], now: number): void {
    if (events.length === 0) return
    if (this.#online) this.#inFlight.push({ at: now + this.#latencyMs(), events, backlog: false })
    else {
      this.#queue.push(events)
      this.#queued += events.length
    }
  }

  /**
   * Going offline fails the uploads still in flight: they go back to the
   * queue, so nothing is lost and nothing is sent twice. Coming online sends
   * the whole queue as one backlog upload.
   */
  setOnline(online: boolean, now: number): void {
    if (online === this.#online) return
    this.#online = online
    if (!online) {
      for (const upload of this.#inFlight) {
        this.#queue.push(upload.events)
        this.#queued += upload.events.length
      }
      this.#inFlight = []
      return
    }
    if (this.#queued === 0) return
    this.#inFlight.push({ at: now + this.#latencyMs(), events: this.#queue.flat(), backlog: true })
    this.#queue = []
    this.#queued = 0
  }

  /** Lands every upload due by `now` in the target, oldest arrival first. */
  deliverDue(now: number): Delivery[] {
    if (this.#inFlight.length === 0) return []
    const due = this.#inFlight.filter((upload) => upload.at <= now)
    if (due.length === 0) return []
    this.#inFlight = this.#inFlight.filter((upload) => upload.at > now)
    due.sort((a, b) => a.at - b.at)
    return due.map((upload) => {
      const receipt = this.#target.ingest(upload.events)
      this.#delivered += upload.events.length
      this.#lastSync = now
      return { source: this.source, events: upload.events.length, backlog: upload.backlog, receipt }
    })
  }

  /** A crash: the in-memory queue is gone. Returns how many events were lost. */
  dropQueue(): number {
    const lost = this.#queued
    this.#queue = []
    this.#queued = 0
    return lost
  }

  status(): LinkStatus {
    let inFlight = 0
    for (const upload of this.#inFlight) inFlight += upload.events.length
    return { online: this.#online, queued: this.#queued, inFlight, lastSync: this.#lastSync, delivered: this.#delivered }
  }
}
