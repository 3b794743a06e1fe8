/**
 * Sync status of one `Y.Doc` across the providers attached to it (`engine.syncStatus()`, `useSyncStatus`).
 *
 * The engine binds to a doc, the application connects providers to the same doc; the
 * tracker is the meeting point, found by doc (`syncStatusTracker(doc)`), so neither side
 * needs a handle on the other. Providers are typed structurally: y-websocket's
 * `WebsocketProvider`, `BroadcastChannelProvider` and Hocuspocus' provider all fit.
 */
import type * as Y from 'yjs'
import type { SyncStatus } from '@tidemark/engine'

/**
 * What the tracker reads from a provider: y-websocket's events and, when present, awareness for peers.
 *
 * @example
 * const provider: SyncProvider = new BroadcastChannelProvider(doc, 'tidemark:fleet', { trackStatus: false })
 */
export interface SyncProvider {
  /** Connection state changes. */
  on(name: 'status', listener: (event: { status: 'connected' | 'connecting' | 'disconnected' }) => void): unknown
  /** `true` once a sync with the other side completed, `false` when it was lost. */
  on(name: 'sync', listener: (synced: boolean) => void): unknown
  /** Removes a `status` listener. */
  off(name: 'status', listener: (event: { status: 'connected' | 'connecting' | 'disconnected' }) => void): unknown
  /** Removes a `sync` listener. */
  off(name: 'sync', listener: (synced: boolean) => void): unknown
  readonly synced?: boolean
  /** y-websocket's connection flags, read once when the provider is attached. */
  readonly wsconnected?: boolean
  readonly wsconnecting?: boolean
  /** `BroadcastChannelProvider`'s connection flag. */
  readonly connected?: boolean
  readonly awareness?: PeerAwareness
}

/**
 * The part of y-protocols' `Awareness` used to count peers.
 *
 * @example
 * const awareness: PeerAwareness = new BroadcastChannelProvider(doc, 'tidemark:fleet').awareness
 */
export interface PeerAwareness {
  /** This client's id: its own state is not a peer. */
  readonly clientID: number
  /** Every known client's state, by client id. */
  getStates(): Map<number, unknown>
  /** Called when clients come, go or change state. */
  on(name: 'change', listener: () => void): void
  /** Removes a `change` listener. */
  off(name: 'change', listener: () => void): void
}

/**
 * A peer's update that could not be applied (undecodable or truncated bytes).
 *
 * @example
 * syncStatusTracker(doc).onRejectedUpdate((rejected: RejectedUpdate) => console.warn(`dropped ${rejected.bytes} bytes`, rejected.error))
 */
export interface RejectedUpdate {
  readonly error: unknown
  readonly bytes: number
  readonly origin: unknown
}

interface ProviderState {
  /** Its transport is open (a socket, a tab channel); says nothing about anyone answering. */
  connected: boolean
  connecting: boolean
  /** A server or a peer answered its sync request on this connection, and is still there. */
  synced: boolean
  readonly awareness: PeerAwareness | undefined
}

const LOCAL: SyncStatus = { state: 'local', lastSync: null, pendingLocalUpdates: 0, peers: 0 }

const trackers = new WeakMap<Y.Doc, SyncStatusTracker>()

/**
 * The tracker of `doc`, created on first use (`now` is taken from the first call).
 *
 * @example
 * const provider = new WebsocketProvider(url, room, doc)
 * const detach = syncStatusTracker(doc).attach(provider)
 * syncStatusTracker(doc).subscribe((status) => render(status.state))
 */
export function syncStatusTracker(doc: Y.Doc, options: { now?: () => number } = {}): SyncStatusTracker {
  let tracker = trackers.get(doc)
  if (tracker === undefined) {
    tracker = new SyncStatusTracker(doc, options.now ?? Date.now)
    trackers.set(doc, tracker)
  }
  return tracker
}

/**
 * Folds the providers attached to one doc into one `SyncStatus`; get the doc's tracker
 * with `syncStatusTracker(doc)`. The member examples below use that tracker.
 *
 * @example
 * const tracker = syncStatusTracker(new Y.Doc())
 * tracker.status().state // 'local' (no provider attached)
 */
export class SyncStatusTracker {
  readonly #doc: Y.Doc
  readonly #now: () => number
  readonly #providers = new Map<SyncProvider, ProviderState>()
  readonly #listeners = new Set<(status: SyncStatus) => void>()
  readonly #rejectedListeners = new Set<(rejected: RejectedUpdate) => void>()
  #status: SyncStatus = LOCAL
  #lastSync: number | null = null
  /** Local transactions made while no provider was in sync: nobody has them yet. */
  #pending = 0

  /**
   * Prefer `syncStatusTracker(doc)`: it keeps one tracker per doc, where providers and the
   * engine meet; a tracker made here is seen by neither.
   *
   * @example
   * const tracker = new SyncStatusTracker(new Y.Doc(), () => performance.now())
   */
  constructor(doc: Y.Doc, now: () => number) {
    this.#doc = doc
    this.#now = now
    // afterTransaction rather than 'update': listening to 'update' makes Yjs encode every transaction.
    doc.on('afterTransaction', this.#onTransaction)
  }

  /**
   * The current status of all attached providers together.
   *
   * @example
   * syncStatusTracker(doc).status() // { state: 'local', lastSync: null, pendingLocalUpdates: 0, peers: 0 } with no provider
   */
  status(): SyncStatus {
    return this.#status
  }

  /**
   * Calls `listener` with every new status; returns the unsubscribe function.
   *
   * @example
   * const unsubscribe = syncStatusTracker(doc).subscribe((status) => console.log(status.state, status.peers))
   */
  subscribe(listener: (status: SyncStatus) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /**
   * Follows a provider's connection, sync and peers; returns the detach function.
   * `BroadcastChannelProvider` attaches itself unless `trackStatus: false`.
   *
   * @example
   * const provider = new BroadcastChannelProvider(doc, 'tidemark:fleet', { trackStatus: false })
   * const detach = syncStatusTracker(doc).attach(provider)
   * syncStatusTracker(doc).status().state // 'connected'
   * detach()
   */
  attach(provider: SyncProvider): () => void {
    if (this.#providers.has(provider)) return () => this.#detach(provider)
    const connected = provider.wsconnected === true || provider.connected === true
    const awareness = provider.awareness
    const state: ProviderState = {
      connected,
      connecting: provider.wsconnecting === true,
      synced: connected && provider.synced === true,
      awareness,
    }
    this.#providers.set(provider, state)
    const onStatus = (event: { status: 'connected' | 'connecting' | 'disconnected' }): void => {
      state.connected = event.status === 'connected'
      state.connecting = event.status === 'connecting'
      if (!state.connected) state.synced = false
      this.#publish()
    }
    const onSync = (synced: boolean): void => {
      state.synced = synced && state.connected
      if (state.synced) {
        // The exchange carried every local update the other side lacked.
        this.#pending = 0
        this.#lastSync = this.#now()
      }
      this.#publish()
    }
    const onPeers = (): void => this.#publish()
    provider.on('status', onStatus)
    provider.on('sync', onSync)
    awareness?.on('change', onPeers)
    this.#detachers.set(provider, () => {
      provider.off('status', onStatus)
      provider.off('sync', onSync)
      awareness?.off('change', onPeers)
    })
    this.#publish()
    return () => this.#detach(provider)
  }

  /**
   * Reports a peer's update that failed to apply (see `applyPeerUpdate`, which calls this).
   *
   * @example
   * syncStatusTracker(doc).reportRejectedUpdate({ error: new RangeError('truncated'), bytes: update.byteLength, origin: socket })
   */
  reportRejectedUpdate(rejected: RejectedUpdate): void {
    for (const listener of this.#rejectedListeners) listener(rejected)
  }

  /**
   * Calls `listener` for every rejected peer update; returns the unsubscribe function.
   *
   * @example
   * const stop = syncStatusTracker(doc).onRejectedUpdate(({ bytes }) => console.warn(`dropped a ${bytes}-byte update`))
   */
  onRejectedUpdate(listener: (rejected: RejectedUpdate) => void): () => void {
    this.#rejectedListeners.add(listener)
    return () => this.#rejectedListeners.delete(listener)
  }

  readonly #detachers = new Map<SyncProvider, () => void>()

  #detach(provider: SyncProvider): void {
    this.#detachers.get(provider)?.()
    this.#detachers.delete(provider)
    this.#providers.delete(provider)
    // Local updates are counted only while some provider is meant to carry them.
    if (this.#providers.size === 0) this.#pending = 0
    this.#publish()
  }

  readonly #onTransaction = (transaction: Y.Transaction): void => {
    if (this.#providers.size === 0 || transaction.changed.size === 0) return
    const synced = this.#anySynced()
    if (transaction.local) {
      // Sent at once over a connection in sync; otherwise it waits for the next sync exchange.
      if (synced) return
      this.#pending++
      this.#publish()
      return
    }
    // A peer's update applied while some provider is in sync: the doc just exchanged state.
    if (synced) {
      this.#lastSync = this.#now()
      this.#publish()
    }
  }

  #anySynced(): boolean {
    for (const state of this.#providers.values()) if (state.synced) return true
    return false
  }

  #publish(): void {
    const next = this.#compute()
    const prev = this.#status
    if (
      next.state === prev.state &&
      next.lastSync === prev.lastSync &&
      next.pendingLocalUpdates === prev.pendingLocalUpdates &&
      next.peers === prev.peers
    ) {
      return
    }
    this.#status = next
    for (const listener of this.#listeners) listener(next)
  }

  #compute(): SyncStatus {
    if (this.#providers.size === 0) return this.#lastSync === null ? LOCAL : { ...LOCAL, lastSync: this.#lastSync }
    let synced = false
    let trying = false
    const peers = new Set<number>()
    for (const state of this.#providers.values()) {
      synced ||= state.synced
      // Opening, or open and waiting for a server or a peer to answer.
      trying ||= state.connecting || state.connected
      const awareness = state.awareness
      if (awareness === undefined) continue
      for (const client of awareness.getStates().keys()) if (client !== awareness.clientID) peers.add(client)
    }
    return {
      state: synced ? 'connected' : trying ? 'connecting' : 'offline',
      lastSync: this.#lastSync,
      pendingLocalUpdates: this.#pending,
      peers: peers.size,
    }
  }

  /**
   * Stops listening to the doc and every provider; the next `syncStatusTracker(doc)` makes a new tracker.
   *
   * @example
   * syncStatusTracker(doc).destroy()
   */
  destroy(): void {
    for (const provider of [...this.#providers.keys()]) this.#detach(provider)
    this.#doc.off('afterTransaction', this.#onTransaction)
    this.#listeners.clear()
    this.#rejectedListeners.clear()
    trackers.delete(this.#doc)
  }
}
