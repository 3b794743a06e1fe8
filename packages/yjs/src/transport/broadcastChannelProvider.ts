/**
 * Cross-tab sync with no server: the y-protocols sync and awareness messages over a
 * BroadcastChannel (the browser's, or Node's global one).
 *
 * Why not an existing provider: y-websocket's built-in channel is tied to a websocket
 * provider and answers every hello with a full-state step 2 to all tabs; y-webrtc needs a
 * signaling server for anything beyond one origin and pulls in WebRTC. This one is ~200
 * lines and does a targeted state-vector exchange, so a tab that (re)connects receives only
 * what it is missing, and only the tab that asked applies the reply.
 *
 * Frame layout (lib0 encoding):
 *
 *   varUint  kind       0 sync, 1 awareness, 2 bye
 *   varUint  from       sender's peer id (random per connection)
 *   varUint  to         addressee's peer id, 0 = every tab
 *   payload             sync: a y-protocols sync message (step 1, step 2 or update)
 *                       awareness: varUint8Array awareness update; bye: nothing
 *
 * On connect a tab sends sync step 1 to everyone. A tab that receives a step 1 from a peer
 * it does not know answers with step 2 addressed to it (what the peer misses) and its own
 * step 1 addressed to it, so both sides end with the union, sending only differences.
 * Local updates are sent to everyone as sync updates.
 */
import { assertKnownOptions } from '@tidemark/engine/adapter'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { ObservableV2 } from 'lib0/observable'
import * as awarenessProtocol from 'y-protocols/awareness'
import * as syncProtocol from 'y-protocols/sync'
import type * as Y from 'yjs'
import { applyPeerUpdate } from '../binding/applyPeerUpdate.ts'
import { announcePresence, awarenessEntries, forgetAbsentPeers } from './presence.ts'
import { syncStatusTracker } from './syncStatusTracker.ts'

const KIND_SYNC = 0
const KIND_AWARENESS = 1
const KIND_BYE = 2
const EVERYONE = 0

/**
 * A message channel shared by every tab of one name; the default wraps `BroadcastChannel`.
 *
 * @example
 * const channel: TabChannel = openBroadcastChannel('tidemark:fleet', (frame) => console.log(frame.byteLength))
 */
export interface TabChannel {
  /**
   * Sends one frame to every other endpoint of the name.
   *
   * @example
   * channel.post(new Uint8Array([1, 2, 3]))
   */
  post(frame: Uint8Array): void
  /**
   * Stops sending and receiving.
   *
   * @example
   * channel.close()
   */
  close(): void
}

/**
 * Opens a channel by name; `receive` gets every frame posted by another endpoint.
 *
 * @example
 * // In-process endpoints (tests, one Node process): every frame goes to the other endpoints of the name.
 * const endpoints = new Map<string, Set<(frame: Uint8Array) => void>>()
 * const openLocal: OpenTabChannel = (name, receive) => {
 *   const peers = endpoints.get(name) ?? new Set()
 *   endpoints.set(name, peers.add(receive))
 *   return { post: (frame) => { for (const peer of peers) if (peer !== receive) peer(frame) }, close: () => peers.delete(receive) }
 * }
 * new BroadcastChannelProvider(doc, 'fleet', { channel: openLocal })
 */
export type OpenTabChannel = (name: string, receive: (frame: Uint8Array) => void) => TabChannel

/**
 * Options of `new BroadcastChannelProvider(doc, name, options)`; all optional.
 *
 * @example
 * new BroadcastChannelProvider(doc, 'tidemark:fleet', { connect: false, trackStatus: false })
 */
export interface BroadcastChannelProviderOptions {
  /** Connect at construction (default true). */
  readonly connect?: boolean
  /** Shared awareness (default: a new one for the doc). */
  readonly awareness?: awarenessProtocol.Awareness
  /** Channel factory (default: the global `BroadcastChannel`). */
  readonly channel?: OpenTabChannel
  /** Report status to the doc's sync status tracker (default true). */
  readonly trackStatus?: boolean
}

type ProviderEvents = {
  status: (event: { status: 'connected' | 'connecting' | 'disconnected' }) => void
  sync: (synced: boolean) => void
  /** A peer's frame that could not be read or applied. */
  error: (error: unknown) => void
}

/**
 * Syncs `doc` with every other tab (or Node worker / in-process doc) that opens the same name.
 *
 * @example
 * const provider = new BroadcastChannelProvider(doc, 'tidemark:fleet')
 * provider.on('sync', (synced) => console.log('tabs in sync', synced))
 * // later
 * provider.destroy()
 */
export class BroadcastChannelProvider extends ObservableV2<ProviderEvents> {
  /** The doc it syncs. */
  readonly doc: Y.Doc
  /** The channel name: tabs that open the same name sync with each other. */
  readonly name: string
  /** Presence of the tabs on this channel (y-protocols `Awareness`). */
  readonly awareness: awarenessProtocol.Awareness
  readonly #open: OpenTabChannel
  readonly #ownsAwareness: boolean
  #channel: TabChannel | null = null
  #peerId = 0
  #peers = new Set<number>()
  /** By peer: the awareness clients its presence frames carried (its tab's doc, and presences it relays), to tell when it timed out. */
  readonly #clientsOf = new Map<number, Set<number>>()
  /**
   * By peer: its own presence, from the frame it addressed to this tab alone (a tab sends its own
   * presence so to each tab whose sync step 1 it answers first; relayed presences go to everyone).
   */
  readonly #ownOf = new Map<number, Set<number>>()
  /** Peers this tab sent its own presence to, addressed to them. */
  readonly #toldPresence = new Set<number>()
  #synced = false
  #detachStatus: (() => void) | null = null

  /**
   * Connects at once unless `connect: false`, and attaches itself to the doc's sync status tracker unless `trackStatus: false`.
   *
   * @example
   * const provider = new BroadcastChannelProvider(doc, 'tidemark:fleet', { connect: false })
   */
  constructor(doc: Y.Doc, name: string, options: BroadcastChannelProviderOptions = {}) {
    super()
    checkOptions(name, options)
    this.doc = doc
    this.name = name
    this.#ownsAwareness = options.awareness === undefined
    this.awareness = options.awareness ?? new awarenessProtocol.Awareness(doc)
    this.#open = options.channel ?? openBroadcastChannel
    doc.on('update', this.#onDocUpdate)
    this.awareness.on('update', this.#onAwarenessUpdate)
    this.awareness.on('change', this.#onAwarenessChange)
    if (options.trackStatus !== false) this.#detachStatus = syncStatusTracker(doc).attach(this)
    if (options.connect !== false) this.connect()
  }

  /**
   * Whether the channel is open (between `connect()` and `disconnect()`).
   *
   * @example
   * new BroadcastChannelProvider(doc, 'tidemark:fleet').connected // true
   */
  get connected(): boolean {
    return this.#channel !== null
  }

  /**
   * True once a peer answered this tab's step 1 since it (re)connected, while at least one
   * peer is still there (false again when the last one says bye or times out).
   *
   * @example
   * provider.on('sync', (synced) => console.log(synced === provider.synced)) // true
   */
  get synced(): boolean {
    return this.#synced
  }

  /**
   * Peers that said hello on this connection and have not said bye.
   *
   * @example
   * provider.peers() // 0 when no other tab has the channel open
   */
  peers(): number {
    return this.#peers.size
  }

  /**
   * Opens the channel and asks the other tabs for what this doc lacks; no-op when connected.
   *
   * @example
   * provider.connect()
   */
  connect(): void {
    if (this.#channel !== null) return
    this.#peerId = randomPeerId()
    this.#channel = this.#open(this.name, this.#receive)
    this.emit('status', [{ status: 'connected' }])
    this.#send(KIND_SYNC, EVERYONE, (encoder) => syncProtocol.writeSyncStep1(encoder, this.doc))
    announcePresence(this.awareness)
  }

  /**
   * Says bye to the other tabs and closes the channel; the doc keeps its content. `connect()` resumes.
   *
   * @example
   * provider.disconnect()
   * provider.connected // false
   */
  disconnect(): void {
    const channel = this.#channel
    if (channel === null) return
    this.#send(KIND_AWARENESS, EVERYONE, (encoder) =>
      encoding.writeVarUint8Array(
        encoder,
        awarenessProtocol.encodeAwarenessUpdate(this.awareness, [this.doc.clientID], new Map()),
      ),
    )
    this.#send(KIND_BYE, EVERYONE, () => {})
    channel.close()
    this.#channel = null
    const others = [...this.awareness.getStates().keys()].filter((client) => client !== this.doc.clientID)
    awarenessProtocol.removeAwarenessStates(this.awareness, others, this)
    forgetAbsentPeers(this.awareness)
    this.#peers.clear()
    this.#forgetAll()
    this.#setSynced(false)
    this.emit('status', [{ status: 'disconnected' }])
  }

  /**
   * Disconnects, stops listening to the doc and detaches from its sync status tracker.
   *
   * @example
   * provider.destroy()
   */
  override destroy(): void {
    this.disconnect()
    this.doc.off('update', this.#onDocUpdate)
    this.awareness.off('update', this.#onAwarenessUpdate)
    this.awareness.off('change', this.#onAwarenessChange)
    this.#detachStatus?.()
    if (this.#ownsAwareness) this.awareness.destroy()
    super.destroy()
  }

  readonly #receive = (frame: Uint8Array): void => {
    if (this.#channel === null) return
    try {
      this.#read(frame)
    } catch (error) {
      // Undecodable framing: the sync payload itself is applied through applyPeerUpdate.
      syncStatusTracker(this.doc).reportRejectedUpdate({ error, bytes: frame.byteLength, origin: this })
      this.emit('error', [error])
    }
  }

  #read(frame: Uint8Array): void {
    const decoder = decoding.createDecoder(frame)
    const kind = decoding.readVarUint(decoder)
    const from = decoding.readVarUint(decoder)
    const to = decoding.readVarUint(decoder)
    if (from === this.#peerId || (to !== EVERYONE && to !== this.#peerId)) return
    if (kind === KIND_BYE) {
      this.#peers.delete(from)
      this.#forget(from)
      // Nobody left to be in sync with: local updates now wait for the next tab.
      if (this.#peers.size === 0) this.#setSynced(false)
      return
    }
    if (kind === KIND_AWARENESS) {
      const update = decoding.readVarUint8Array(decoder)
      awarenessProtocol.applyAwarenessUpdate(this.awareness, update, this)
      this.#noteClients(this.#clientsOf, from, update)
      if (to === this.#peerId) this.#noteClients(this.#ownOf, from, update)
      return
    }
    if (kind !== KIND_SYNC) throw new Error(`unknown frame kind ${kind}`)
    const syncType = decoding.readVarUint(decoder)
    if (syncType === syncProtocol.messageYjsSyncStep1) {
      const stateVector = decoding.readVarUint8Array(decoder)
      this.#send(KIND_SYNC, from, (encoder) => syncProtocol.writeSyncStep2(encoder, this.doc, stateVector))
      if (!this.#peers.has(from)) {
        this.#peers.add(from)
        this.#send(KIND_SYNC, from, (encoder) => syncProtocol.writeSyncStep1(encoder, this.doc))
      }
      if (!this.#toldPresence.has(from)) {
        this.#toldPresence.add(from)
        this.#sendAwareness(from, [this.doc.clientID])
      }
    } else if (syncType === syncProtocol.messageYjsSyncStep2) {
      this.#peers.add(from)
      if (applyPeerUpdate(this.doc, decoding.readVarUint8Array(decoder), this)) this.#setSynced(true)
      else this.emit('error', [new Error('a peer sync step 2 could not be applied')])
    } else if (syncType === syncProtocol.messageYjsUpdate) {
      if (!applyPeerUpdate(this.doc, decoding.readVarUint8Array(decoder), this)) {
        this.emit('error', [new Error('a peer update could not be applied')])
      }
    } else {
      throw new Error(`unknown sync message type ${syncType}`)
    }
  }

  readonly #onDocUpdate = (update: Uint8Array, origin: unknown): void => {
    if (origin === this || this.#channel === null) return
    this.#send(KIND_SYNC, EVERYONE, (encoder) => syncProtocol.writeUpdate(encoder, update))
  }

  readonly #onAwarenessUpdate = (
    changes: { added: number[]; updated: number[]; removed: number[] },
    origin: unknown,
  ): void => {
    if (origin === this) return
    this.#sendAwareness(EVERYONE, [...changes.added, ...changes.updated, ...changes.removed])
  }

  /**
   * A tab that vanished without a bye (a crash, a killed process) stops renewing its presence;
   * awareness drops it after 30 s. When no other tab is left, nobody is in sync with this one.
   */
  readonly #onAwarenessChange = (_changes: unknown, origin: unknown): void => {
    if (origin !== 'timeout' || this.#peers.size === 0) return
    const states = this.awareness.getStates()
    let others = false
    for (const client of states.keys()) if (client !== this.awareness.clientID) others = true
    // A peer whose own presence timed out is gone (or, where it never said which is its own, every
    // presence it carried); one whose presence never came, once no other tab is left.
    for (const peer of [...this.#peers]) {
      const clients = this.#ownOf.get(peer) ?? this.#clientsOf.get(peer)
      if (clients === undefined ? others : [...clients].some((client) => states.has(client))) continue
      this.#peers.delete(peer)
      this.#forget(peer)
    }
    if (this.#peers.size === 0) this.#setSynced(false)
  }

  #forget(peer: number): void {
    this.#clientsOf.delete(peer)
    this.#ownOf.delete(peer)
    this.#toldPresence.delete(peer)
  }

  #forgetAll(): void {
    this.#clientsOf.clear()
    this.#ownOf.clear()
    this.#toldPresence.clear()
  }

  /** Notes in `into` the awareness clients a peer's presence frame set (the client ids an awareness update lists first in each entry). */
  #noteClients(into: Map<number, Set<number>>, from: number, update: Uint8Array): void {
    for (const { client, state } of awarenessEntries(update)) {
      if (state === 'null') continue
      let clients = into.get(from)
      if (clients === undefined) {
        clients = new Set()
        into.set(from, clients)
      }
      // Bounded by what a tab shows: its own doc, and the presences it relays.
      if (clients.size < 64) clients.add(client)
    }
  }

  #sendAwareness(to: number, clients: number[]): void {
    this.#send(KIND_AWARENESS, to, (encoder) =>
      encoding.writeVarUint8Array(encoder, awarenessProtocol.encodeAwarenessUpdate(this.awareness, clients)),
    )
  }

  #send(kind: number, to: number, writePayload: (encoder: encoding.Encoder) => void): void {
    const channel = this.#channel
    if (channel === null) return
    const encoder = encoding.createEncoder()
    encoding.writeVarUint(encoder, kind)
    encoding.writeVarUint(encoder, this.#peerId)
    encoding.writeVarUint(encoder, to)
    writePayload(encoder)
    channel.post(encoding.toUint8Array(encoder))
  }

  #setSynced(synced: boolean): void {
    if (this.#synced === synced) return
    this.#synced = synced
    this.emit('sync', [synced])
  }
}

const OPTION_KEYS: readonly (keyof BroadcastChannelProviderOptions)[] = ['connect', 'awareness', 'channel', 'trackStatus']

/** Throws a TypeError naming the first bad argument or option. */
function checkOptions(name: string, options: BroadcastChannelProviderOptions): void {
  if (typeof name !== 'string' || name.length === 0) throw new TypeError(`BroadcastChannelProvider: name must be a non-empty string (the channel name), got ${String(name)}`)
  if (typeof options !== 'object' || options === null) throw new TypeError('BroadcastChannelProvider: options must be an object')
  assertKnownOptions('BroadcastChannelProvider', options, OPTION_KEYS)
  for (const flag of ['connect', 'trackStatus'] as const) {
    if (options[flag] !== undefined && typeof options[flag] !== 'boolean') throw new TypeError(`BroadcastChannelProvider: ${flag} must be true or false, got ${String(options[flag])}`)
  }
  if (options.channel !== undefined && typeof options.channel !== 'function') {
    throw new TypeError('BroadcastChannelProvider: channel must be a function (name, receive) => TabChannel')
  }
  const awareness = options.awareness
  if (awareness !== undefined && (typeof awareness !== 'object' || awareness === null || typeof awareness.getStates !== 'function')) {
    throw new TypeError('BroadcastChannelProvider: awareness must be a y-protocols Awareness')
  }
}

/**
 * The default channel: the platform `BroadcastChannel`, unref'd in Node so it never holds the process open.
 *
 * @example
 * const channel = openBroadcastChannel('tidemark:fleet', (frame) => console.log(frame.byteLength))
 * channel.post(new Uint8Array([1, 2, 3])) // other endpoints of 'tidemark:fleet' receive it
 * channel.close()
 */
export const openBroadcastChannel: OpenTabChannel = (name, receive) => {
  const channel = new BroadcastChannel(name)
  channel.onmessage = (event: MessageEvent) => {
    const data: unknown = event.data
    if (data instanceof Uint8Array) receive(data)
    else if (data instanceof ArrayBuffer) receive(new Uint8Array(data))
  }
  const unref = (channel as unknown as { unref?: () => void }).unref
  if (typeof unref === 'function') unref.call(channel)
  return {
    post: (frame) => channel.postMessage(frame),
    close: () => channel.close(),
  }
}

function randomPeerId(): number {
  // 1..2^31-1: zero addresses everyone.
  return 1 + Math.floor(Math.random() * 0x7ffffffe)
}
