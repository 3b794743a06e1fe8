/**
 * Sync status of one `Y.Doc` across the providers attached to it (`engine.syncStatus()`, `useSyncStatus`).
 *
 * The engine binds to a doc, the application connects providers to the same doc; the
 * tracker is the meeting point, found by doc (`syncStatusTracker(doc)`), so neither side
 * needs a handle on the other. Event providers are typed structurally (`attach`: y-websocket's
 * `WebsocketProvider`, `BroadcastChannelProvider`); a transport that knows more (the relay
 * client: acknowledgements, refusals) reports through `open()`.
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

/**
 * What a transport knows about its connection of one doc, reported through `TrackedConnection.update`.
 *
 * @example
 * const facts: ConnectionFacts = { connected: true, connecting: false, synced: true, unacknowledged: 0, refusal: null }
 */
export interface ConnectionFacts {
  /** Its transport is open (a socket, a tab channel); says nothing about anyone answering. */
  readonly connected: boolean
  /** Opening, or about to retry. */
  readonly connecting: boolean
  /** A server or a peer answered its sync request on this connection, and is still there. */
  readonly synced: boolean
  /**
   * Local updates the other side has not acknowledged, for a transport whose server
   * acknowledges each update (the relay). `null`: it does not, and the tracker counts the local
   * transactions made while this connection is not in sync instead.
   */
  readonly unacknowledged: number | null
  /** Why the server refused this client (authentication or an update), or null. */
  readonly refusal: string | null
}

/**
 * One connection reported by its transport: `update` with what changed, `exchanged` after each
 * sync exchange (an acknowledgement), `detach` when it ends.
 *
 * @example
 * const connection: TrackedConnection = syncStatusTracker(doc).open()
 * connection.update({ connected: true })
 * connection.update({ synced: true, unacknowledged: 0 })
 * connection.detach()
 */
export interface TrackedConnection {
  /** Merges changed facts and republishes the doc's status. */
  update(facts: Partial<ConnectionFacts>): void
  /** A sync exchange completed (an update acknowledged): moves `lastSync`. */
  exchanged(): void
  /** Stops counting this connection. */
  detach(): void
}

interface ConnectionState {
  connected: boolean
  connecting: boolean
  synced: boolean
  unacknowledged: number | null
  refusal: string | null
  /** Local transactions made while this connection was not in sync (when it does not acknowledge). */
  missed: number
  readonly awareness: PeerAwareness | undefined
}

const LOCAL: SyncStatus = { state: 'local', lastSync: null, pendingLocalUpdates: 0, peers: 0, refusal: null }

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
  readonly #connections = new Set<ConnectionState>()
  readonly #providers = new Map<SyncProvider, TrackedConnection>()
  readonly #listeners = new Set<(status: SyncStatus) => void>()
  readonly #rejectedListeners = new Set<(rejected: RejectedUpdate) => void>()
  #status: SyncStatus = LOCAL
  #lastSync: number | null = null

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
   * syncStatusTracker(doc).status() // { state: 'local', lastSync: null, pendingLocalUpdates: 0, peers: 0, refusal: null } with no provider
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
   * Follows a provider's connection, sync and peers through its events; returns the detach
   * function. `BroadcastChannelProvider` attaches itself unless `trackStatus: false`.
   *
   * @example
   * const provider = new BroadcastChannelProvider(doc, 'tidemark:fleet', { trackStatus: false })
   * const detach = syncStatusTracker(doc).attach(provider)
   * syncStatusTracker(doc).status().state // 'connecting' until another tab answers
   * detach()
   */
  attach(provider: SyncProvider): () => void {
    if (this.#providers.has(provider)) return () => this.#detach(provider)
    const connected = provider.wsconnected === true || provider.connected === true
    const connection = this.open(provider.awareness, {
      connected,
      connecting: provider.wsconnecting === true,
      synced: connected && provider.synced === true,
    })
    let open = connected
    const onStatus = (event: { status: 'connected' | 'connecting' | 'disconnected' }): void => {
      open = event.status === 'connected'
      connection.update({ connected: open, connecting: event.status === 'connecting', ...(open ? {} : { synced: false }) })
    }
    // The exchange carried every local update the other side lacked.
    const onSync = (synced: boolean): void => connection.update({ synced: synced && open })
    provider.on('status', onStatus)
    provider.on('sync', onSync)
    this.#providers.set(provider, {
      update: connection.update,
      exchanged: connection.exchanged,
      detach: () => {
        provider.off('status', onStatus)
        provider.off('sync', onSync)
        connection.detach()
      },
    })
    return () => this.#detach(provider)
  }

  /**
   * Starts counting a connection whose transport reports its facts itself (the relay client
   * does); `awareness`, when given, counts its peers. Returns the connection's handle.
   *
   * @example
   * const connection = syncStatusTracker(doc).open()
   * connection.update({ connecting: true })
   * connection.update({ connected: true, connecting: false })
   * connection.update({ synced: true, unacknowledged: 0 }) // the server answered
   * syncStatusTracker(doc).status().state // 'connected'
   */
  open(awareness?: PeerAwareness, initial: Partial<ConnectionFacts> = {}): TrackedConnection {
    const state: ConnectionState = {
      connected: false,
      connecting: false,
      synced: false,
      unacknowledged: null,
      refusal: null,
      // What the doc held of this client before the connection opened counts as one transaction
      // not sent yet, until its first sync exchange (as the relay's rooms count it).
      missed: this.#doc.store.clients.has(this.#doc.clientID) ? 1 : 0,
      awareness,
    }
    Object.assign(state, initial)
    this.#connections.add(state)
    const onPeers = (): void => this.#publish()
    awareness?.on('change', onPeers)
    let attached = true
    const connection: TrackedConnection = {
      update: (facts) => {
        if (!attached) return
        const wasSynced = state.synced
        Object.assign(state, facts)
        if (state.synced && !wasSynced) {
          state.missed = 0
          this.#lastSync = this.#now()
        }
        this.#publish()
      },
      exchanged: () => {
        if (!attached) return
        this.#lastSync = this.#now()
        this.#publish()
      },
      detach: () => {
        if (!attached) return
        attached = false
        awareness?.off('change', onPeers)
        this.#connections.delete(state)
        this.#publish()
      },
    }
    this.#publish()
    return connection
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

  #detach(provider: SyncProvider): void {
    this.#providers.get(provider)?.detach()
    this.#providers.delete(provider)
  }

  readonly #onTransaction = (transaction: Y.Transaction): void => {
    if (this.#connections.size === 0 || transaction.changed.size === 0) return
    if (transaction.local) {
      // Sent at once over a connection in sync; otherwise it waits for that connection's next sync exchange.
      let missed = false
      for (const state of this.#connections) {
        if (state.synced || state.unacknowledged !== null) continue
        state.missed++
        missed = true
      }
      if (missed) this.#publish()
      return
    }
    // A peer's update applied while some provider is in sync: the doc just exchanged state.
    for (const state of this.#connections) {
      if (!state.synced) continue
      this.#lastSync = this.#now()
      this.#publish()
      return
    }
  }

  #publish(): void {
    const next = this.#compute()
    const prev = this.#status
    if (
      next.state === prev.state &&
      next.lastSync === prev.lastSync &&
      next.pendingLocalUpdates === prev.pendingLocalUpdates &&
      next.peers === prev.peers &&
      next.refusal === prev.refusal
    ) {
      return
    }
    this.#status = next
    for (const listener of this.#listeners) listener(next)
  }

  #compute(): SyncStatus {
    if (this.#connections.size === 0) return this.#lastSync === null ? LOCAL : { ...LOCAL, lastSync: this.#lastSync }
    let synced = false
    let trying = false
    // An update is pending while no connection has it: the least any connection misses.
    let pending = Number.POSITIVE_INFINITY
    let refusal: string | null = null
    const peers = new Set<number>()
    for (const state of this.#connections) {
      synced ||= state.synced
      // Opening, or open and waiting for a server or a peer to answer.
      trying ||= state.connecting || state.connected
      pending = Math.min(pending, state.unacknowledged ?? state.missed)
      refusal ??= state.refusal
      const awareness = state.awareness
      if (awareness === undefined) continue
      for (const client of awareness.getStates().keys()) if (client !== awareness.clientID) peers.add(client)
    }
    return {
      state: synced ? 'connected' : trying ? 'connecting' : 'offline',
      lastSync: this.#lastSync,
      pendingLocalUpdates: pending,
      peers: peers.size,
      refusal,
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
