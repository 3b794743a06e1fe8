/**
 * Where this replica's state stands with the others, for the UI. Filled in by the transport
 * bound to the engine (`bindDoc` with its doc's providers); an engine with no provider
 * reports `local`.
 *
 * @example
 * createEngine({ windows: tumbling(60_000) }).syncStatus() // { state: 'local', lastSync: null, pendingLocalUpdates: 0, peers: 0, refusal: null }
 * const { state, pendingLocalUpdates } = engine.syncStatus()
 * const label = state === 'connected' ? 'in sync' : `${pendingLocalUpdates} updates not shared yet (${state})`
 */
export interface SyncStatus {
  /**
   * - `local`: no provider is attached; nothing is shared, and nothing is meant to be.
   * - `connected`: at least one provider is in sync now: a server answered its sync request
   *   on the current connection, or another tab or peer did and is still there. Local updates
   *   reach them as they are made.
   * - `connecting`: none is in sync, but one is trying: a socket opening, or open and waiting
   *   for the server's answer; a tab channel open with no other tab to answer yet.
   * - `offline`: every provider is disconnected.
   */
  readonly state: 'local' | 'connecting' | 'connected' | 'offline'
  /**
   * Processing time (the binding's `now`) of the last sync exchange a provider completed, or
   * of the last peer update applied while in sync; null before the first.
   */
  readonly lastSync: number | null
  /**
   * Local updates no server or peer has yet: counted while no provider is in sync, back to 0
   * when one completes a sync exchange (which carries them). 0 in `local` and, after that
   * exchange, for as long as a provider stays in sync.
   */
  readonly pendingLocalUpdates: number
  /**
   * Other clients present now (tabs, devices), counted once however many providers see them;
   * a server is not a peer, so `connected` with `peers: 0` means a server and no one else.
   */
  readonly peers: number
  /**
   * Why a server refused this client, as the server said it, or null: a failed authentication
   * (`tidemark:token-expired`, `tidemark:room-not-allowed fleet-a/d07`, ...) or a refused update
   * (`tidemark:refused foreign-source s9`). A refused document is not retried: its state stays
   * `offline` (unless another provider carries it) until the application joins it again.
   */
  readonly refusal: string | null
}
