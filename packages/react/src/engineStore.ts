import {
  createFrameScheduler,
  EngineFeed,
  type EngineFrame,
  type EngineSlice,
  type EngineStats,
  type FrameScheduler,
  type LateEvent,
  lateEventsSlice,
  type ObservedEngine,
  statsSlice,
  type SyncStatus,
  syncStatusSlice,
  watermarkSlice,
  type WindowResult,
  windowsSlice,
} from '@tidemark/engine'
import { callEach } from '@tidemark/engine/adapter'

/** The engine state a store holds; each field keeps its identity while unchanged. */
export interface EngineState {
  /** Every live window result, as `engine.results()` returns them. */
  readonly results: readonly WindowResult[]
  readonly lateEvents: readonly LateEvent[]
  readonly stats: EngineStats
  readonly syncStatus: SyncStatus
  readonly watermark: number
}

/**
 * A read-only store of the engine's state, with zustand's store contract (`getState`,
 * `getInitialState`, `subscribe(listener(state, previous))`): zustand's `useStore(store,
 * selector)` reads it, and so can any selector library. The engine is the only writer.
 */
export interface EngineStore {
  /** The state now (read from the engine directly while nobody subscribes). */
  getState(): EngineState
  /** The state when the store was made. */
  getInitialState(): EngineState
  /** Calls `listener` after each frame that changed the state, with the state before it; returns the unsubscribe function. */
  subscribe(listener: (state: EngineState, previous: EngineState) => void): () => void
}

/**
 * Options of `createEngineStore`.
 *
 * @example
 * const store = createEngineStore(engine, { scheduler: createManualScheduler() }) // frames on flush(), for tests
 */
export interface EngineStoreOptions {
  /** When frames run; default `createFrameScheduler()`. */
  readonly scheduler?: FrameScheduler | undefined
}

type StateSlices = { readonly [K in keyof EngineState]: EngineSlice<EngineState[K]> }

const stateSlices: StateSlices = {
  results: windowsSlice(),
  lateEvents: lateEventsSlice,
  stats: statsSlice,
  syncStatus: syncStatusSlice,
  watermark: watermarkSlice,
}

const stateKeys = Object.keys(stateSlices) as readonly (keyof EngineState)[]

/**
 * A store of the engine's state for selector-based dashboards, updated at most once per frame
 * and read with zustand's `useStore(store, selector)` (zustand is needed only for that hook:
 * the store itself depends on nothing). It listens to the engine only while it has
 * subscribers, so a store nobody subscribes to leaks nothing; meanwhile `getState()` reads the
 * engine directly. Fields that did not change keep their identity, so a selector over them
 * does not re-render.
 *
 * @example
 * const store = createEngineStore(engine)
 * function CorrectedCount() {
 *   const corrected = useStore(store, (s) => s.stats.corrections)
 *   return <span>{corrected}</span>
 * }
 */
export function createEngineStore(engine: ObservedEngine, options: EngineStoreOptions = {}): EngineStore {
  const feed = new EngineFeed(engine, options.scheduler ?? createFrameScheduler())
  const initial: EngineState = {
    results: stateSlices.results.read(engine),
    lateEvents: stateSlices.lateEvents.read(engine),
    stats: stateSlices.stats.read(engine),
    syncStatus: stateSlices.syncStatus.read(engine),
    watermark: stateSlices.watermark.read(engine),
  }
  let state = initial
  const listeners = new Set<(state: EngineState, previous: EngineState) => void>()

  /** Re-reads the fields `frame` can have changed (all of them without a frame); one notification at most. */
  const refresh = (frame: EngineFrame | null): void => {
    let next: Record<string, unknown> | null = null
    for (const key of stateKeys) {
      const slice = stateSlices[key] as EngineSlice<unknown>
      const value =
        frame === null ? slice.share(state[key], slice.read(engine)) : slice.advance(state[key], frame, engine)
      if (value === state[key]) continue
      next ??= { ...state }
      next[key] = value
    }
    if (next === null) return
    const previous = state
    state = next as unknown as EngineState
    // Every listener hears the frame even when one throws (the first error is rethrown after): one skipped would miss it for good.
    callEach([...listeners], (listener) => listener(state, previous))
  }

  let subscribers = 0
  let stopFeed: (() => void) | null = null
  return {
    getState: () => {
      if (stopFeed === null) refresh(null)
      return state
    },
    getInitialState: () => initial,
    subscribe: (listener) => {
      // A wrapper per call, so one function subscribed twice is called twice, as in zustand.
      const entry = (next: EngineState, previous: EngineState): void => listener(next, previous)
      if (stopFeed === null) {
        stopFeed = feed.subscribe(refresh)
        // Catches up with the engine before the listener joins: as in zustand, a listener is
        // called for changes after it subscribed, never inside `subscribe`.
        refresh(null)
      }
      listeners.add(entry)
      const unsubscribe = () => listeners.delete(entry)
      subscribers++
      let subscribed = true
      return () => {
        if (!subscribed) return
        subscribed = false
        unsubscribe()
        subscribers--
        if (subscribers === 0 && stopFeed !== null) {
          stopFeed()
          stopFeed = null
        }
      }
    },
  }
}
