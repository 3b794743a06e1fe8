import type { Cell } from '../lattice/cell.ts'
import { EventTimeQueue } from '../time/eventTimeQueue.ts'
import type { Frontiers } from '../time/frontiers.ts'
import type { ReplicationOutbox } from '../replica/replicationOutbox.ts'
import type { WindowTracker, WindowIndex } from './windowIndex.ts'
import type { Basis, WindowChange, WindowResult } from './windowResult.ts'
import type { WindowState } from './windowState.ts'

export interface LifecycleSettings {
  readonly allowedLateness: number
  readonly retention: number
  readonly historyLimit: number
}

/**
 * Moves windows through provisional → on time → corrected → final → gone, in event-time
 * order, from three queues keyed by the time each step becomes due, so that a step never
 * scans live windows. Collects the changes of one batch and hands them out in `settle()`.
 */
export class WindowLifecycle implements WindowTracker {
  readonly #settings: LifecycleSettings
  readonly #frontiers: Frontiers
  readonly #indexes: readonly WindowIndex[]
  readonly #outbox: ReplicationOutbox
  readonly #writes: (source: string) => boolean
  /** Windows not yet fired, by end. */
  readonly #unfired = new EventTimeQueue<WindowState>()
  /** Fired windows not yet final, by end + allowedLateness. */
  readonly #unfinal = new EventTimeQueue<WindowState>()
  /** Final windows waiting to leave live state, by end + allowedLateness + retention. */
  readonly #expiring = new EventTimeQueue<WindowState>()
  #touched: WindowState[] = []
  #changes: WindowChange[] = []
  corrections = 0

  /**
   * What window indexes report while they place events or merge peers' cells: this object
   * itself, so its callbacks are prototype methods shared by every engine (per-instance closures
   * made the placement loop's call sites megamorphic across engines).
   */
  get tracker(): WindowTracker {
    return this
  }

  constructor(
    settings: LifecycleSettings,
    frontiers: Frontiers,
    indexes: readonly WindowIndex[],
    outbox: ReplicationOutbox,
    writes: (source: string) => boolean,
  ) {
    this.#settings = settings
    this.#frontiers = frontiers
    this.#indexes = indexes
    this.#outbox = outbox
    this.#writes = writes
  }

  created(w: WindowState): void {
    if (w.fired) {
      // Born past the firing frontier: record how that frontier knew, before it moves.
      w.basis = this.basis(w.end)
      w.basisEnd = w.end
      this.#unfinal.push(w.end + this.#settings.allowedLateness, w)
    } else this.#unfired.push(w.end, w)
  }

  touched(w: WindowState): void {
    this.#touched.push(w)
  }

  grown(w: WindowState): void {
    if (w.fired) this.#unfinal.push(w.end + this.#settings.allowedLateness, w)
    else this.#unfired.push(w.end, w)
  }

  swallowed(w: WindowState): void {
    if (w.emitted !== null) this.#changes.push({ type: 'retract', result: w.emitted })
  }

  written(w: WindowState, source: string, start: number, cell: Cell): void {
    this.#outbox.cell(w, source, start, cell)
  }

  /** Queues a window restored from a checkpoint for its next step. */
  adopt(w: WindowState): void {
    const lateness = this.#settings.allowedLateness
    if (w.final) this.#expiring.push(w.end + lateness + this.#settings.retention, w)
    else if (w.fired) this.#unfinal.push(w.end + lateness, w)
    else this.#unfired.push(w.end, w)
  }

  /** How the current frontiers know a window ending at `end` is complete. */
  basis(end: number): Basis {
    const f = this.#frontiers
    if (f.proof >= end) return 'proven'
    if (f.strictWatermark >= end) return 'derived'
    if (f.watermark >= end) return 'fallback'
    return 'unknown'
  }

  /** After the frontiers moved: corrections, firings, provisional updates, finality and expiry. Returns the batch's changes. */
  settle(): WindowChange[] {
    const changes = this.#changes
    const { allowedLateness: lateness, historyLimit, retention } = this.#settings
    const W = this.#frontiers.watermark
    const F = this.#frontiers.firingFrontier()
    const provisional: WindowState[] = []
    for (const w of this.#touched) {
      if (!w.live) continue
      if (!w.fired) {
        provisional.push(w)
        continue
      }
      const revision = Math.max(w.revision + 1, 1)
      let basis = this.basis(w.end)
      if (basis === 'unknown' && w.end <= w.basisEnd) basis = w.basis
      const result = w.result('corrected', revision, w.end + lateness <= W, basis)
      const previous = w.emitted
      changes.push(previous === null ? { type: 'correction', result } : { type: 'correction', result, previous })
      w.revision = revision
      w.remember(result, historyLimit)
      this.corrections++
    }
    this.#touched = []
    while (this.#unfired.peekAt() <= F) {
      const w = this.#unfired.pop()
      if (!w.live || w.fired || w.end > F) continue
      w.fired = true
      w.revision = 0
      w.basis = this.basis(w.end)
      w.basisEnd = w.end
      const final = w.end + lateness <= W
      const result = w.result('on_time', 0, final, w.basis)
      changes.push({ type: 'on_time', result })
      w.remember(result, historyLimit)
      if (final) this.#markFinal(w)
      else this.#unfinal.push(w.end + lateness, w)
    }
    for (const w of provisional) {
      if (w.fired || !w.live) continue
      const result = w.result('provisional', 0, false, 'unknown')
      changes.push({ type: 'provisional', result })
      w.remember(result, historyLimit)
    }
    while (this.#unfinal.peekAt() <= W) {
      const w = this.#unfinal.pop()
      if (!w.live || w.final || w.end + lateness > W) continue
      const emitted = w.emitted
      if (emitted !== null) {
        // A session that grew past what was known gets its basis back: W passed end + lateness.
        const basis = emitted.basis === 'unknown' ? this.basis(w.end) : emitted.basis
        const result: WindowResult = { ...emitted, final: true, basis }
        changes.push({ type: 'final', result })
        w.emitted = result
      }
      this.#markFinal(w)
    }
    while (this.#expiring.peekAt() <= W) {
      const w = this.#expiring.pop()
      if (!w.live || w.end + lateness + retention > W) continue
      this.#outbox.expire(w, this.#writes)
      this.#indexes.find((i) => i.id === w.window)?.remove(w)
    }
    this.#changes = []
    return changes
  }

  #markFinal(w: WindowState): void {
    w.final = true
    this.#expiring.push(w.end + this.#settings.allowedLateness + this.#settings.retention, w)
  }
}
