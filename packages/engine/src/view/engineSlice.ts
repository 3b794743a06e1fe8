import type { EngineStats, LateEvent } from '../core/engineApi.ts'
import type { SyncStatus } from '../replica/syncStatus.ts'
import type { ResultQuery, WindowResult } from '../windows/windowResult.ts'
import type { ObservedEngine } from './engineFeed.ts'
import type { EngineFrame } from './engineFrame.ts'
import { sameField, sameWindowResult, shallowEqual, shareArray, shareRecord } from './structuralSharing.ts'
import { positionOf, type WindowAddress } from './windowAddresses.ts'

/**
 * One piece of engine state a consumer watches: how to read it, how a frame
 * moves it on, and how to keep the old value when the new one is equal.
 *
 * `read` copies arrays and records: an engine may return its own buffers and
 * mutate them later, which would change a snapshot React already rendered
 * and hide the change from `share`. Results themselves are taken as immutable
 * (the engine keeps them in `history`).
 */
export interface EngineSlice<T> {
  /**
   * The one window this slice depends on: its observer is then called only in
   * frames that changed that window. Without it, in every frame.
   */
  readonly watches?: WindowAddress
  /** The slice as the engine holds it now: at mount, on subscribe, and for a store nobody listens to. */
  read(engine: ObservedEngine): T
  /** `previous` when `next` shows the same thing, else `next` (sharing unchanged parts of `previous`). */
  share(previous: T, next: T): T
  /** The slice after `frame`; `previous` itself when the frame did not change it. */
  advance(previous: T, frame: EngineFrame, engine: ObservedEngine): T
}

/** A slice that is re-read from the engine in every frame that `affectedBy` says can have changed it. */
function rereadSlice<T>(
  read: (engine: ObservedEngine) => T,
  affectedBy: (frame: EngineFrame) => boolean,
  share: (previous: T, next: T) => T,
): EngineSlice<T> {
  return {
    read,
    share,
    advance: (previous, frame, engine) => (affectedBy(frame) ? share(previous, read(engine)) : previous),
  }
}

const sameOrNext = <T>(same: (a: T, b: T) => boolean) => (previous: T, next: T): T =>
  same(previous, next) ? previous : next

const everyFrame = (): boolean => true

/**
 * Results matching `query`, as `engine.results(query)` returns them; re-read only in frames with
 * a change inside `query`.
 *
 * @example
 * const observer = new EngineObserver(feed, windowsSlice({ window: 'tumbling:60000', key: 'temp' }))
 * observer.getSnapshot() // the live minutes of 'temp', the same array until one of them changes
 */
export function windowsSlice(query?: ResultQuery): EngineSlice<readonly WindowResult[]> {
  return rereadSlice<readonly WindowResult[]>(
    (engine) => engine.results(query).slice(),
    (frame) => frame.matches(query),
    (previous, next) => shareArray(previous, next, sameWindowResult),
  )
}

/**
 * The current result of one window, or `undefined` while it has none. A frame
 * is answered from its own changes, without asking the engine: the last
 * change to a window carries its value (`retract` removes it), and
 * `engine.results()` may scan every window.
 *
 * The windows of a cumulating spec share their start: `end` names one (without it, the one
 * covering the whole period).
 *
 * @example
 * const minute = new EngineObserver(feed, windowSlice('tumbling:60000', 'temp', 0))
 * const stop = minute.subscribe(() => draw(minute.getSnapshot())) // called only in frames that changed this minute
 * const twoHours = windowSlice('cumulating:86400000:3600000', 'temp', day, day + 7_200_000) // the day's first two hours
 */
export function windowSlice(window: string, key: string, start: number, end?: number): EngineSlice<WindowResult | undefined> {
  const share = (previous: WindowResult | undefined, next: WindowResult | undefined) =>
    previous !== undefined && next !== undefined && sameWindowResult(previous, next) ? previous : next
  const watches: WindowAddress = end === undefined ? { window, key, start } : { window, key, start, end }
  const position = positionOf(watches)
  return {
    watches,
    // `to` is exclusive; the find guards against an engine that filters loosely.
    read: (engine) => engine.results({ window, key, from: start, to: start + 1 }).find((r) => r.start === start && positionOf(r) === position),
    share,
    advance: (previous, frame) => {
      const latest = frame.latest(window, key, start, end)
      return latest === undefined ? previous : share(previous, latest ?? undefined)
    },
  }
}

/**
 * Every on-time and late pane of one window, oldest first (`engine.history()`); `end` names one
 * window of a cumulating spec.
 *
 * @example
 * const history = new EngineObserver(feed, windowHistorySlice('tumbling:60000', 'temp', 0))
 * history.getSnapshot()[0]?.status // 'on_time' once the minute fired
 */
export function windowHistorySlice(window: string, key: string, start: number, end?: number): EngineSlice<readonly WindowResult[]> {
  return {
    ...rereadSlice<readonly WindowResult[]>(
      (engine) => engine.history(window, key, start, end).slice(),
      (frame) => frame.touches(window, key, start, end),
      (previous, next) => shareArray(previous, next, sameWindowResult),
    ),
    watches: end === undefined ? { window, key, start } : { window, key, start, end },
  }
}

// The late lane, stats, sync status and watermark can change without a window
// changing, so they are re-read in every frame and kept when equal.

/**
 * The late lane (`engine.lateEvents()`), re-read in every frame and kept while equal.
 *
 * @example
 * const late = new EngineObserver(feed, lateEventsSlice)
 * late.getSnapshot().length // entries on the late lane
 */
export const lateEventsSlice: EngineSlice<readonly LateEvent[]> = rereadSlice<readonly LateEvent[]>(
  (engine) => engine.lateEvents().slice(),
  everyFrame,
  (previous, next) => shareArray(previous, next, Object.is),
)

/**
 * The engine's counters (`engine.stats()`), re-read in every frame and kept while equal; a field
 * equal to the one before (the anomaly counts, the future sources) keeps its identity.
 *
 * @example
 * const stats = new EngineObserver(feed, statsSlice)
 * const lag = stats.select((s) => s.watermarkLag, Object.is)
 */
export const statsSlice: EngineSlice<EngineStats> = rereadSlice(
  (engine) => {
    const stats = engine.stats()
    return { ...stats, anomalies: { ...stats.anomalies } }
  },
  everyFrame,
  (previous, next) => shareRecord(previous, next, sameField),
)

/**
 * The connection state (`engine.syncStatus()`), re-read in every frame and kept while equal.
 *
 * @example
 * const sync = new EngineObserver(feed, syncStatusSlice)
 * sync.getSnapshot().state // 'local' without a provider
 */
export const syncStatusSlice: EngineSlice<SyncStatus> = rereadSlice(
  (engine) => ({ ...engine.syncStatus() }),
  everyFrame,
  sameOrNext<SyncStatus>(shallowEqual),
)

/**
 * The watermark (`engine.watermark()`), re-read in every frame.
 *
 * @example
 * const watermark = new EngineObserver(feed, watermarkSlice)
 * watermark.getSnapshot() // -Infinity before the first event
 */
export const watermarkSlice: EngineSlice<number> = rereadSlice(
  (engine) => engine.watermark(),
  everyFrame,
  sameOrNext<number>(Object.is),
)
