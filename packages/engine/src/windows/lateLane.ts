import type { AnomalyReason } from '../input/anomaly.ts'
import { copyStreamEvent, type StreamEvent } from '../input/event.ts'
import { plainConstructor } from '../input/plainConstructor.ts'

/**
 * An event that a window refused, and why.
 *
 * @example
 * for (const { event, window, reason } of engine.lateEvents()) console.log(event.id, window, reason) // for example: c tumbling:60000 beyond_lateness
 */
export interface LateEvent {
  /** A copy of the refused event. */
  readonly event: StreamEvent
  /** Id of the window spec that refused it, when one did. */
  readonly window?: string
  /** Why it was refused: `beyond_lateness` for the engine's late lane. */
  readonly reason: AnomalyReason
}

/** A `LateEvent` being built: its fields writable. */
type LateFields = { -readonly [K in keyof LateEvent]: LateEvent[K] }

/** Makes the late lane's entries, plain objects (an entry lives until the lane is full): `window` absent when no spec refused the event. */
const LateRecord = /* @__PURE__ */ plainConstructor(function (this: LateFields, event: StreamEvent, window: string | undefined) {
  this.event = event
  if (window !== undefined) this.window = window
  this.reason = 'beyond_lateness'
})

/**
 * The late lane: a bounded ring of events that windows refused. When full, the
 * oldest entry is dropped from the lane (never from the counts) and `trimmed` says how many.
 */
export class LateLane {
  readonly #capacity: number
  #ring: LateEvent[] = []
  #head = 0
  #snapshot: readonly LateEvent[] | null = null
  trimmed = 0
  total = 0

  constructor(capacity: number) {
    this.#capacity = Math.max(0, capacity)
  }

  /**
   * Keeps a copy of `event`, refused beyond lateness (by window spec `window`, when one refused it).
   *
   * @example
   * lateLane.keep(event, 'tumbling:60000')
   */
  keep(event: StreamEvent, window?: string): void {
    this.total++
    this.#snapshot = null
    if (this.#capacity === 0) {
      this.trimmed++
      return
    }
    const entry = new LateRecord(copyStreamEvent(event), window)
    if (this.#ring.length < this.#capacity) {
      this.#ring.push(entry)
      return
    }
    this.#ring[this.#head] = entry
    this.#head = (this.#head + 1) % this.#capacity
    this.trimmed++
  }

  get size(): number {
    return this.#ring.length
  }

  /** Refills the lane from a checkpoint. */
  restore(entries: readonly LateEvent[], trimmed: number, total: number): void {
    this.#ring = entries.slice(-Math.max(1, this.#capacity)).slice(0, this.#capacity)
    this.#head = 0
    this.#snapshot = null
    // A lane restored into a smaller bound drops its oldest entries, counted like any other trim.
    this.trimmed = trimmed + entries.length - this.#ring.length
    this.total = total
  }

  /** Oldest first; the same array until the lane changes, so it is safe as a React snapshot. */
  list(): readonly LateEvent[] {
    if (this.#snapshot === null) {
      this.#snapshot = Object.freeze([...this.#ring.slice(this.#head), ...this.#ring.slice(0, this.#head)])
    }
    return this.#snapshot
  }
}
