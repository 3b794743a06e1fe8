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
import { createStore, type StoreApi } from 'zustand/vanilla'

/** The engine state a store holds; each field keeps its identity while unchanged. */
export interface EngineState {
  /** Every live window result, as `engine.results()` returns them. */
  readonly results: readonly WindowResult[]
  readonly lateEvents: readonly LateEvent[]
  readonly stats: EngineStats
  readonly syncStatus: SyncStatus
  readonly watermark: number
}

/** A read-only zustand store: the engine is the only writer. */
export type EngineStore = Pick<StoreApi<EngineState>, 'getState' | 'getInitialState' | 'subscribe'>

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
 * A vanilla zustand store of the engine's state, updated at most once per
 * frame, for selector-based dashboards (`useStore(store, selector)`). It
 * listens to the engine only while it has subscribers, so a store nobody
 * subscribes to leaks nothing; meanwhile `getState()` reads the engine
 * directly. Fields that did not change keep their identity, so a selector
 * over them does not re-render.
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
  const store = createStore<EngineState>()(() => ({
    results: stateSlices.results.read(engine),
    lateEvents: stateSlices.lateEvents.read(engine),
    stats: stateSlices.stats.read(engine),
    syncStatus: stateSlices.syncStatus.read(engine),
    watermark: stateSlices.watermark.read(engine),
  }))

  /** Re-reads the fields `frame` can have changed (all of them without a frame); one `setState` at most. */
  const refresh = (frame: EngineFrame | null): void => {
    const state = store.getState()
    let next: Record<string, unknown> | null = null
    for (const key of stateKeys) {
      const slice = stateSlices[key] as EngineSlice<unknown>
      const value =
        frame === null ? slice.share(state[key], slice.read(engine)) : slice.advance(state[key], frame, engine)
      if (value === state[key]) continue
      next ??= { ...state }
      next[key] = value
    }
    if (next !== null) store.setState(next as unknown as EngineState, true)
  }

  let subscribers = 0
  let stopFeed: (() => void) | null = null
  return {
    getState: () => {
      if (stopFeed === null) refresh(null)
      return store.getState()
    },
    getInitialState: store.getInitialState,
    subscribe: (listener) => {
      const unsubscribe = store.subscribe(listener)
      subscribers++
      if (stopFeed === null) {
        stopFeed = feed.subscribe(refresh)
        refresh(null)
      }
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
