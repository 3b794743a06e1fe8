import { type SyncStatus, syncStatusSlice } from '@tidemark/engine'
import { useEngineSlice } from './useEngineSlice.ts'

/**
 * The engine's connection state (`engine.syncStatus()`): `local`,
 * `connecting`, `connected` or `offline`, with last sync time, pending local
 * updates, peers and why a server refused this client (`refusal`, or null). Re-read in each frame the engine notified; renders only
 * when it changed.
 *
 * @example
 * function SyncBadge() {
 *   const { state, pendingLocalUpdates } = useSyncStatus()
 *   return <span data-state={state}>{state} ({pendingLocalUpdates} pending)</span>
 * }
 */
export function useSyncStatus(): SyncStatus
export function useSyncStatus<S>(selector: (status: SyncStatus) => S, isEqual?: (a: S, b: S) => boolean): S
export function useSyncStatus(
  selector?: (status: SyncStatus) => unknown,
  isEqual?: (a: unknown, b: unknown) => boolean,
): unknown {
  return useEngineSlice('useSyncStatus', () => syncStatusSlice, [], selector, isEqual)
}
