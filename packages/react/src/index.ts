/**
 * `@tidemark/react`: React hooks, a provider and a zustand-compatible store over an engine,
 * rendering at most once per animation frame.
 *
 * @module @tidemark/react
 */
export { createEngineStore } from './engineStore.ts'
export { EngineProvider } from './EngineProvider.tsx'
export { createFrameScheduler } from '@tidemark/engine'
export { createManualScheduler } from '@tidemark/engine'
export { useEngineStats } from './useEngineStats.ts'
export { useLateEvents } from './useLateEvents.ts'
export { useSyncStatus } from './useSyncStatus.ts'
export { useWatermark } from './useWatermark.ts'
export { useWindow } from './useWindow.ts'
export { useWindowHistory } from './useWindowHistory.ts'
export { useWindows } from './useWindows.ts'
export { windowHooks } from './windowHooks.ts'

export type { ObservedEngine } from '@tidemark/engine'
export type { EngineProviderProps } from './EngineProvider.tsx'
export type { EngineState, EngineStore, EngineStoreOptions } from './engineStore.ts'
export type { WindowAt } from './useWindow.ts'
export type { WindowHooks } from './windowHooks.ts'
export type { FrameScheduler } from '@tidemark/engine'
export type { ManualScheduler } from '@tidemark/engine'
