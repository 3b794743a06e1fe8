import type { EngineStats, LateEvent } from '../core/engineApi.ts'
import type { SyncStatus } from '../replica/syncStatus.ts'
import type { StreamEvent } from '../input/event.ts'
import type { ObservedEngine } from '../view/engineFeed.ts'
import type { PaneInfo, ResultQuery, WindowChange, WindowResult } from '../windows/windowResult.ts'

const HOUR = 'tumbling:3600000'

/**
 * A window result with plausible values for one event of value `sum`; a window id of
 * `'tumbling:3600000'` spans an hour, any other a minute. Its pane follows its status and
 * revision: an on-time result is the on-time pane, revision `n` the `n`-th late pane.
 *
 * @example
 * fakeWindowResult('tumbling:60000', 'temp', 0, 21).end // 60000
 */
export function fakeWindowResult(
  window: string,
  key: string,
  start: number,
  sum: number,
  overrides: Partial<WindowResult> = {},
): WindowResult {
  const size = window === HOUR ? 3_600_000 : 60_000
  const status = overrides.status ?? 'on_time'
  const revision = overrides.revision ?? 0
  const pane: PaneInfo =
    status === 'provisional'
      ? { timing: 'early', index: 0, onTimeIndex: -1 }
      : { timing: status === 'on_time' ? 'on_time' : 'late', index: revision, onTimeIndex: revision }
  return {
    window,
    key,
    start,
    end: start + size,
    count: 1,
    sum,
    min: sum,
    max: sum,
    mean: sum,
    status,
    revision,
    final: false,
    basis: 'derived',
    pane,
    ...overrides,
  }
}

function emptyStats(): EngineStats {
  return {
    ingested: 0,
    applied: 0,
    duplicates: 0,
    anomalies: { duplicate: 0, beyond_lateness: 0 } as EngineStats['anomalies'],
    lateAdmitted: 0,
    beyondLateness: 0,
    pending: 0,
    openWindows: 0,
    cells: 0,
    sources: 0,
    finishedSources: 0,
    idleSources: 0,
    dedupEntries: 0,
    lateLane: 0,
    lateLaneTrimmed: 0,
    corrections: 0,
    watermark: 0,
    proofFrontier: 0,
    watermarkLag: 0,
    proofHeldBy: null,
    watermarkHeldBy: null,
    finalityViolations: 0,
    docBytes: 0,
    walRecords: 0,
    walBytes: 0,
    persistenceError: null,
    replicationError: null,
    remoteAnomalies: [],
    futureSources: [],
    timers: 0,
  }
}

/**
 * A stand-in for the engine with the same observable contract, for testing a binding or a
 * view without running windows: synchronous notifications after each "batch", results
 * filtered like `results(query)`, and methods that set what the engine shows.
 * It deliberately returns its own mutable arrays from `history()` and
 * `lateEvents()` and mutates them later, and fresh result objects from
 * `results()`, as a real engine might, so the bindings' defensive copies and
 * structural sharing are exercised.
 *
 * @example
 * const engine = new FakeEngine()
 * const feed = new EngineFeed(engine, createManualScheduler())
 * engine.emit('tumbling:60000', 'temp', 0, 21) // one on-time result, one notification
 */
export class FakeEngine implements ObservedEngine {
  /** How often each reader was called, to prove observers skip untouched slices. */
  readonly reads = { results: 0, history: 0 }
  #results = new Map<string, WindowResult>()
  #history = new Map<string, WindowResult[]>()
  #late: LateEvent[] = []
  #stats: EngineStats = emptyStats()
  #sync: SyncStatus = { state: 'local', lastSync: null, pendingLocalUpdates: 0, peers: 0, refusal: null }
  #watermark = 0
  #listeners = new Set<(changes: readonly WindowChange[]) => void>()

  get listenerCount(): number {
    return this.#listeners.size
  }

  subscribe(listener: (changes: readonly WindowChange[]) => void): () => void {
    // A wrapper per call, so subscribing one function twice counts twice.
    const entry = (changes: readonly WindowChange[]): void => listener(changes)
    this.#listeners.add(entry)
    return () => {
      this.#listeners.delete(entry)
    }
  }

  results(query: ResultQuery = {}): readonly WindowResult[] {
    this.reads.results++
    // Fresh objects on every call, as an engine that builds results on demand gives.
    return [...this.#results.values()]
      .filter(
        (r) =>
          (query.window === undefined || r.window === query.window) &&
          (query.key === undefined || r.key === query.key) &&
          (query.from === undefined || r.start >= query.from) &&
          (query.to === undefined || r.start < query.to),
      )
      .map((r) => ({ ...r }))
  }

  history(window: string, key: string, start: number, _end?: number): readonly WindowResult[] {
    this.reads.history++
    return this.#history.get(id(window, key, start)) ?? []
  }

  lateEvents(): readonly LateEvent[] {
    return this.#late
  }

  stats(): EngineStats {
    return this.#stats
  }

  syncStatus(): SyncStatus {
    return this.#sync
  }

  watermark(): number {
    return this.#watermark
  }

  /** One batch: sets the window's value (on time the first time, a correction after) and notifies. */
  emit(window: string, key: string, start: number, sum: number): WindowChange {
    const change = this.#apply(window, key, start, sum)
    this.notify([change])
    return change
  }

  /** One batch touching several windows (e.g. a remote merge). */
  emitMany(updates: readonly (readonly [window: string, key: string, start: number, sum: number])[]): void {
    this.notify(updates.map(([w, k, s, sum]) => this.#apply(w, k, s, sum)))
  }

  /** A batch that retracts a window (a session swallowed by a merge). */
  retract(window: string, key: string, start: number): void {
    const windowId = id(window, key, start)
    const result = this.#results.get(windowId)
    if (result === undefined) throw new Error(`no window ${windowId} to retract`)
    this.#results.delete(windowId)
    this.notify([{ type: 'retract', result, pane: result.pane }])
  }

  /** A batch that corrects a window into one with another start (a session extended to the left). */
  move(window: string, key: string, from: number, to: number, sum: number): void {
    const previous = this.#results.get(id(window, key, from))
    if (previous === undefined) throw new Error(`no window at ${from} to move`)
    this.#results.delete(id(window, key, from))
    const result = fakeWindowResult(window, key, to, sum, { status: 'corrected', revision: previous.revision + 1 })
    this.#results.set(id(window, key, to), result)
    this.notify([{ type: 'correction', result, pane: result.pane, previous }])
  }

  /** A batch that changed no window but put `event` on the late lane. */
  addLate(event: StreamEvent, window: string): void {
    this.#late.push({ event, window, reason: 'beyond_lateness' })
    this.#stats = { ...this.#stats, lateLane: this.#late.length, beyondLateness: this.#stats.beyondLateness + 1 }
    this.notify([])
  }

  /** A batch that changed only counters. */
  setStats(patch: Partial<EngineStats>): void {
    this.#stats = { ...this.#stats, ...patch }
    this.notify([])
  }

  /** A connection change; the engine announces it as an empty batch. */
  setSync(patch: Partial<SyncStatus>): void {
    this.#sync = { ...this.#sync, ...patch }
    this.notify([])
  }

  /** Sets what `watermark()` returns and notifies (a batch that moved only the watermark). */
  setWatermark(watermark: number): void {
    this.#watermark = watermark
    this.notify([])
  }

  /** Calls every subscriber with `changes`, as the engine does after a batch. */
  notify(changes: readonly WindowChange[]): void {
    for (const listener of this.#listeners) listener(changes)
  }

  #apply(window: string, key: string, start: number, sum: number): WindowChange {
    const windowId = id(window, key, start)
    const previous = this.#results.get(windowId)
    const result =
      previous === undefined
        ? fakeWindowResult(window, key, start, sum)
        : fakeWindowResult(window, key, start, sum, {
            count: previous.count + 1,
            status: 'corrected',
            revision: previous.revision + 1,
          })
    this.#results.set(windowId, result)
    const history = this.#history.get(windowId)
    if (history === undefined) this.#history.set(windowId, [result])
    else history.push(result)
    return previous === undefined ? { type: 'on_time', result, pane: result.pane } : { type: 'correction', result, pane: result.pane, previous }
  }
}

function id(window: string, key: string, start: number): string {
  return `${window}|${key}|${start}`
}
