import type { AggregateSet, States } from '../aggregates/aggregateSet.ts'
import type { Cell } from '../lattice/cell.ts'
import type { Aggregate } from '../lattice/cellSet.ts'
import type { WriteOutbox } from './placementPorts.ts'
import { EventTimeQueue } from '../time/eventTimeQueue.ts'
import type { Frontiers } from '../time/frontiers.ts'
import { paneInfo } from './paneInfo.ts'
import { deadlineOf, hasDeadlines, type Trigger } from './trigger.ts'
import type { WindowIndex, WindowTracker } from './windowIndex.ts'
import { type Accumulation, type Basis, compareResults, type PaneTiming, type ResultStatus, type WindowChange, type WindowChangeType, type WindowResult } from './windowResult.ts'
import type { PaneTimer, WindowState } from './windowState.ts'
import { WindowList } from './windowList.ts'

export interface LifecycleSettings {
  readonly allowedLateness: number
  readonly retention: number
  readonly historyLimit: number
  readonly early: Trigger
  readonly late: Trigger
  readonly accumulation: Accumulation
  readonly aggregates: AggregateSet | null
}

const NOTHING: Aggregate = Object.freeze({ count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY })

/**
 * Moves windows through provisional → on time → corrected → final → gone, in event-time
 * order, from three queues keyed by the time each step becomes due, so that a step never
 * scans live windows; and fires their panes as the triggers say, processing-time triggers from
 * a fourth queue keyed by deadline. Collects the changes of one batch and hands them out in `settle()`.
 */
export class WindowLifecycle implements WindowTracker {
  readonly #settings: LifecycleSettings
  readonly #frontiers: Frontiers
  readonly #indexes: readonly WindowIndex[]
  readonly #outbox: WriteOutbox
  readonly #writes: (source: string) => boolean
  /** Windows not yet fired, by end. */
  readonly #unfired = new EventTimeQueue<WindowState>()
  /** Fired windows not yet final, by end + allowedLateness. */
  readonly #unfinal = new EventTimeQueue<WindowState>()
  /** Final windows waiting to leave live state, by end + allowedLateness + retention. */
  readonly #expiring = new EventTimeQueue<WindowState>()
  /** Windows with an armed processing-time trigger, by deadline (entries of cancelled timers are skipped). */
  readonly #timers = new EventTimeQueue<WindowState>()
  #armed = 0
  /**
   * Windows changed while the clock read no finite time (NaN, an infinity), so that no deadline
   * could be worked out: their timers are armed at the clock's next finite reading, as if changed
   * then (docs/bad-input.md, B17). A Set: a window changed at many such readings is armed once.
   * A window leaves it with the pane that shows its change, or when it turns final or is
   * swallowed: it holds live windows only, however long the clock reads no time.
   */
  readonly #unstamped = new Set<WindowState>()
  /** The last timer armed: timers due together fire in the order they were armed. */
  timerSeq = 0
  /** Windows placement and merges touched since the last settle. */
  readonly #touched = new WindowList()
  /** Windows due an early pane in this settle. */
  readonly #early = new WindowList()
  /** Windows due to fire on time, or to turn final, in this settle (reused). */
  readonly #due: WindowState[] = []
  #changes: WindowChange[] = []
  corrections = 0
  readonly #discarding: boolean
  readonly #expired = (window: string, key: string, start: number, source: string): void => {
    // Asked first: an outbox nobody listens to keeps nothing, and each cell leaving would cost a lookup and an address.
    if (this.#outbox.listening && this.#writes(source)) this.#outbox.expire({ window, key, start, source })
  }

  /**
   * What window indexes report while they place events or merge peers' cells: this object
   * itself, so its callbacks are prototype methods shared by every engine (per-instance closures
   * made the placement loop's call sites megamorphic across engines).
   */
  get tracker(): WindowTracker {
    return this
  }

  /** Processing-time triggers armed now. */
  get timers(): number {
    return this.#armed
  }

  /**
   * Whether a settle at `now` arms the timers of windows changed while the clock read no finite
   * time: a change, which a tick's log record must replay.
   */
  stampsAt(now: number): boolean {
    return this.#unstamped.size > 0 && Number.isFinite(now)
  }

  /**
   * The deadline of the earliest armed processing-time trigger, +Infinity when none is armed (nor
   * any timer of a window changed while the clock read no finite time: not known before the next finite reading).
   * Entries of cancelled timers ahead of it leave the queue on the way (a tick would skip them).
   */
  nextTimerAt(): number {
    const timers = this.#timers
    while (timers.size > 0) {
      const at = timers.peekAt()
      const w = timers.peek()
      if (w.live && w.timer?.at === at) return at
      timers.pop()
    }
    return Number.POSITIVE_INFINITY
  }

  constructor(
    settings: LifecycleSettings,
    frontiers: Frontiers,
    indexes: readonly WindowIndex[],
    outbox: WriteOutbox,
    writes: (source: string) => boolean,
  ) {
    this.#settings = settings
    this.#frontiers = frontiers
    this.#indexes = indexes
    this.#outbox = outbox
    this.#writes = writes
    this.#discarding = settings.accumulation === 'discarding'
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
    this.#touched.add(w)
  }

  grown(w: WindowState, previousEnd: number): void {
    const { allowedLateness } = this.#settings
    // A final one that shrank leaves at its new end's time (one that grew is queued again when its old entry comes due).
    if (w.final && w.end < previousEnd) this.#leaveAt(w)
    if (w.fired) this.#unfinal.push(w.end + allowedLateness, w)
    // An unfired window that grew keeps its entry, at its old end: when that comes due, the entry
    // moves to its end. One that shrank (a peer's tombstone took the fragment that set its end)
    // needs an entry at its new end.
    else if (w.end < previousEnd) this.#unfired.push(w.end, w)
  }

  swallowed(w: WindowState, gone: boolean): void {
    // A session that stays under a new start keeps its trigger: its pane is still to come.
    if (gone) {
      this.#cancel(w)
      this.#unstamped.delete(w)
    }
    const emitted = w.emitted
    if (emitted !== null) this.#changes.push({ type: 'retract', result: emitted, pane: emitted.pane })
  }

  written(window: string, key: string, start: number, source: string, cell: Cell, states: States | null): void {
    this.#outbox.cell(window, key, start, source, cell, states)
  }

  replaced(w: WindowState): void {
    if (this.#discarding) w.whole = true
  }

  expired(window: string, key: string, start: number, source: string): void {
    this.#expired(window, key, start, source)
  }

  /**
   * Queues a window restored from a checkpoint for its next step, and its armed trigger. Triggers
   * and accumulation are local choices a checkpoint may not share: a timer this engine's trigger
   * never arms is dropped (what it waited for shows at the window's next pane), a change no timer
   * waits for under this engine's processing-time trigger (made while the clock read no finite
   * time) arms one at the next finite reading, and a window with data no pane showed that kept no
   * discarding part carries its whole value next.
   */
  adopt(w: WindowState): void {
    const { allowedLateness: lateness, early, late } = this.#settings
    if (w.final) this.#leaveAt(w)
    else if (w.fired) this.#unfinal.push(w.end + lateness, w)
    else this.#unfired.push(w.end, w)
    if (!w.final && !hasDeadlines(w.fired ? late : early)) w.timer = null
    if (!this.#discarding) {
      w.pending = null
      w.pendingStates = null
    } else if (w.dirty && w.pending === null) w.whole = true
    if (w.timer !== null) {
      this.#timers.push(w.timer.at, w)
      this.#armed++
    } else if (w.dirty && !w.final && hasDeadlines(w.fired ? late : early)) {
      // A change no timer was armed for: made while the clock read no finite time.
      this.#unstamped.add(w)
    }
  }

  /** How the current frontiers know a window ending at `end` is complete. */
  basis(end: number): Basis {
    const f = this.#frontiers
    if (f.proof >= end) return 'proven'
    if (f.strictWatermark >= end) return 'derived'
    if (f.watermark >= end) return 'fallback'
    return 'unknown'
  }

  /**
   * After the frontiers moved, at processing time `now`: late and early panes of the windows the
   * operation changed (or their timers), on-time firings, processing-time panes now due (only
   * when `timers`: a `tick`), finality and expiry. Returns the operation's changes.
   */
  settle(now: number, timers: boolean): WindowChange[] {
    const changes = this.#changes
    const { allowedLateness: lateness, retention, early, late } = this.#settings
    const W = this.#frontiers.watermark
    const F = this.#frontiers.firingFrontier()
    const provisional = this.#early
    const touched = this.#touched
    if (this.#unstamped.size > 0 && Number.isFinite(now)) this.#stamp(now)
    for (let t = 0; t < touched.size; t++) {
      const w = touched.at(t)
      if (!w.live) continue
      w.dirty = true
      if (!w.fired) {
        if (early.kind === 'every_element') provisional.add(w)
        else if (early.kind !== 'never') this.#arm(w, early, now)
      } else if (late.kind === 'every_element' || w.final) {
        // A final window (only a peer's cell reaches one) has no finality left to show it at: its pane comes now.
        this.#latePane(w, W, changes)
      } else {
        // A session a merge fired (it took in a fired one) drops the early timer it had armed.
        if (w.timer?.late === false) this.#cancel(w)
        if (late.kind !== 'never') this.#arm(w, late, now)
      }
    }
    touched.clear()
    const due = this.#due
    while (this.#unfired.dueBy(F)) {
      const w = this.#unfired.pop()
      if (!w.live || w.fired) continue
      if (w.end > F) {
        // A session that grew since it was queued: one entry per window, moved to its end.
        this.#unfired.push(w.end, w)
        continue
      }
      due.push(w)
    }
    for (const w of inFiringOrder(due)) {
      // Queued twice (it shrank while unfired): fired at the first.
      if (w.fired) continue
      w.fired = true
      w.revision = 0
      w.basis = this.basis(w.end)
      w.basisEnd = w.end
      const final = w.end + lateness <= W
      this.#pane(w, 'on_time', 'on_time', 0, final, w.basis, false, changes)
      if (final) this.#markFinal(w)
      else this.#unfinal.push(w.end + lateness, w)
    }
    due.length = 0
    for (let p = 0; p < provisional.size; p++) {
      const w = provisional.at(p)
      if (w.fired || !w.live) continue
      this.#pane(w, 'provisional', 'provisional', 0, false, 'unknown', false, changes)
    }
    provisional.clear()
    if (timers && this.#timers.dueBy(now)) this.#fireTimers(now, W, changes)
    while (this.#unfinal.dueBy(W)) {
      const w = this.#unfinal.pop()
      if (!w.live || w.final || w.end + lateness > W) continue
      due.push(w)
    }
    for (const w of inFiringOrder(due)) {
      // Queued twice (a session that grew): final at the first.
      if (w.final) continue
      // Late data no pane has shown yet (its trigger waits, or never fires): its pane comes now.
      if (w.dirty && w.fired) this.#latePane(w, W, changes)
      const emitted = w.emitted
      if (emitted !== null) {
        // A session that grew past what was known gets its basis back: W passed end + lateness.
        const basis = emitted.basis === 'unknown' ? this.basis(w.end) : emitted.basis
        const result: WindowResult = { ...emitted, final: true, basis }
        changes.push({ type: 'final', result, pane: result.pane })
        w.emitted = result
      }
      this.#markFinal(w)
    }
    due.length = 0
    while (this.#expiring.dueBy(W)) {
      const w = this.#expiring.pop()
      if (!w.live) continue
      if (w.end + lateness + retention > W) {
        // A final session a peer's fragment grew: it leaves at its new end's time.
        this.#leaveAt(w)
        continue
      }
      // A final window restored from a checkpoint an earlier version wrote may hold a late trigger
      // a peer's cell armed (its pane now comes at once): it leaves with the window.
      this.#cancel(w)
      this.#indexes.find((i) => i.id === w.window)?.remove(w, this.#expired)
    }
    this.#changes = []
    return changes
  }

  /** A late pane: a correction of a fired window, final once W passed its end + allowedLateness. */
  #latePane(w: WindowState, W: number, changes: WindowChange[]): void {
    const revision = Math.max(w.revision + 1, 1)
    let basis = this.basis(w.end)
    if (basis === 'unknown' && w.end <= w.basisEnd) basis = w.basis
    w.revision = revision
    // A final window stays final: a peer's cell that grew it (a session) does not reopen it.
    this.#pane(w, 'correction', 'corrected', revision, w.final || w.end + this.#settings.allowedLateness <= W, basis, true, changes)
    this.corrections++
  }

  /**
   * Emits a pane of `w`: its whole value (accumulating, or a discarding pane that must carry the
   * whole window) or what arrived since its last pane. `previous` is the result it replaces:
   * accumulating mode, for a correction; discarding mode, for a pane carrying the whole window.
   */
  #pane(
    w: WindowState,
    type: WindowChangeType,
    status: ResultStatus,
    revision: number,
    final: boolean,
    basis: Basis,
    correction: boolean,
    changes: WindowChange[],
  ): void {
    const timing: PaneTiming = status === 'provisional' ? 'early' : status === 'on_time' ? 'on_time' : 'late'
    const pane = paneInfo(timing, w.panes, timing === 'early' ? -1 : w.onTimePanes)
    w.panes++
    if (timing !== 'early') w.onTimePanes++
    let part: Aggregate | null = null
    let previous = correction ? w.emitted : null
    if (this.#discarding) {
      previous = w.whole ? w.emitted : null
      if (!w.whole) {
        const pending = w.pending ?? NOTHING
        part = this.#settings.aggregates === null ? pending : { count: pending.count, sum: pending.sum, min: pending.min, max: pending.max, states: w.pendingStates }
      }
      w.pending = null
      w.pendingStates = null
      w.whole = false
    }
    const result = w.result(status, revision, final, basis, pane, this.#settings.aggregates, part)
    // A store past the end rather than `push`, which was a call to the generic builtin here, per pane.
    changes[changes.length] = previous === null ? { type, result, pane } : { type, result, pane, previous }
    w.remember(result, this.#settings.historyLimit)
    w.dirty = false
    this.#cancel(w)
    // Shown: nothing is left for a timer armed at the next finite reading.
    if (this.#unstamped.size > 0) this.#unstamped.delete(w)
  }

  #arm(w: WindowState, trigger: Trigger, now: number): void {
    if (w.timer !== null) return
    const at = deadlineOf(trigger, now)
    // A clock that gave no usable time arms nothing yet: its next finite reading does (`#stamp`).
    if (!Number.isFinite(at)) {
      this.#unstamped.add(w)
      return
    }
    w.timer = { at, seq: ++this.timerSeq, late: w.fired }
    this.#timers.push(at, w)
    this.#armed++
  }

  /**
   * Arms, at the finite reading `now`, the timers of the windows changed while the clock read no
   * finite time that no pane has shown since, in the order `results()` lists them: the order in
   * which they were changed is not in a checkpoint, and a restored engine must fire their panes in
   * the order the live one does.
   */
  #stamp(now: number): void {
    const { early, late } = this.#settings
    const unstamped = [...this.#unstamped].sort(compareResults)
    this.#unstamped.clear()
    for (const w of unstamped) {
      const trigger = w.fired ? late : early
      if (w.live && w.dirty && !w.final && hasDeadlines(trigger)) this.#arm(w, trigger, now)
    }
  }

  #cancel(w: WindowState): void {
    if (w.timer === null) return
    w.timer = null
    this.#armed--
    // Cancelled timers stay queued until due: drop them once they outnumber the armed ones.
    if (this.#timers.size > 2 * this.#armed + 64) this.#timers.retain((item, at) => item.live && item.timer?.at === at)
  }

  /** Fires the processing-time triggers due at `now`, in deadline order, then the order they were armed in. */
  #fireTimers(now: number, W: number, changes: WindowChange[]): void {
    const due: WindowState[] = []
    while (this.#timers.dueBy(now)) {
      const at = this.#timers.peekAt()
      const w = this.#timers.pop()
      if (w.live && w.timer?.at === at) due.push(w)
    }
    due.sort((a, b) => (a.timer as PaneTimer).at - (b.timer as PaneTimer).at || (a.timer as PaneTimer).seq - (b.timer as PaneTimer).seq)
    let last: WindowState | null = null
    for (const w of due) {
      // A window queued twice at one deadline (cancelled, then armed again) sorts next to itself.
      if (w === last) continue
      last = w
      if (!w.dirty) this.#cancel(w)
      else if (!w.fired) this.#pane(w, 'provisional', 'provisional', 0, false, 'unknown', false, changes)
      else if (!w.final) this.#latePane(w, W, changes)
      else this.#cancel(w)
    }
  }

  #markFinal(w: WindowState): void {
    w.final = true
    if (this.#unstamped.size > 0) this.#unstamped.delete(w)
    this.#leaveAt(w)
  }

  /**
   * Queues a final window to leave live state once the watermark passes its end, lateness and
   * retention. With `retention: Infinity` it never leaves (the watermark at Infinity too, which
   * every finite time is due by).
   */
  #leaveAt(w: WindowState): void {
    const { allowedLateness, retention } = this.#settings
    if (retention !== Number.POSITIVE_INFINITY) this.#expiring.push(w.end + allowedLateness + retention, w)
  }
}

/**
 * Windows due together (on time, or final), by end, then in the order `results()` lists them: the
 * same order live and after a checkpoint restore, whose queues hold equal ends in another order.
 * They come out of their queue by end, so the sort only has ties to put in order.
 */
function inFiringOrder(due: WindowState[]): readonly WindowState[] {
  if (due.length > 1) due.sort((a, b) => a.end - b.end || compareResults(a, b))
  return due
}
