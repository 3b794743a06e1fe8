/**
 * Sync status says what is true: `connected` only while a server or a peer is in sync with
 * this replica, pending local updates drop when a sync exchange carries them and do not grow
 * while updates reach someone, and peers are other clients present now, counted once.
 */
import { describe, expect, it } from 'vitest'
import * as awarenessProtocol from 'y-protocols/awareness'
import * as Y from 'yjs'
import { bindDoc } from '../src/binding/bindDoc.ts'
import { BroadcastChannelProvider, type OpenTabChannel } from '../src/transport/broadcastChannelProvider.ts'
import { type SyncProvider, syncStatusTracker } from '../src/transport/syncStatusTracker.ts'
import { cellOf, fakePort } from './fakePort.ts'

const T0 = 1_700_000_040_000

/** In-memory tabs delivering frames at once. */
function memoryTabs() {
  const endpoints = new Map<string, Set<(frame: Uint8Array) => void>>()
  const open: OpenTabChannel = (name, receive) => {
    const set = endpoints.get(name) ?? new Set()
    endpoints.set(name, set.add(receive))
    return {
      post: (frame) => {
        for (const other of [...set]) if (other !== receive) other(frame)
      },
      close: () => set.delete(receive),
    }
  }
  return { open, endpoints }
}

type StatusEvent = { status: 'connected' | 'connecting' | 'disconnected' }

/** A y-websocket-like provider driven by hand: a socket opens, the server answers, the socket drops. */
class FakeServerProvider implements SyncProvider {
  wsconnected = false
  wsconnecting = false
  synced = false
  readonly awareness: awarenessProtocol.Awareness
  readonly #listeners = new Map<string, Set<(arg: never) => void>>()

  constructor(doc: Y.Doc) {
    this.awareness = new awarenessProtocol.Awareness(doc)
  }

  on(name: string, listener: (arg: never) => void): void {
    const set = this.#listeners.get(name) ?? new Set()
    this.#listeners.set(name, set.add(listener))
  }

  off(name: string, listener: (arg: never) => void): void {
    this.#listeners.get(name)?.delete(listener)
  }

  #emit(name: string, arg: unknown): void {
    for (const listener of this.#listeners.get(name) ?? []) listener(arg as never)
  }

  status(status: StatusEvent['status']): void {
    this.wsconnected = status === 'connected'
    this.wsconnecting = status === 'connecting'
    if (status !== 'connected') this.synced = false
    this.#emit('status', { status })
  }

  /** The server's sync step 2 arrived. */
  serverAnswered(): void {
    this.synced = true
    this.#emit('sync', true)
  }
}

function boundDoc() {
  const doc = new Y.Doc()
  let now = 1_000
  const clock = { set: (t: number) => (now = t) }
  const port = fakePort(`r${doc.clientID}`)
  const tracker = syncStatusTracker(doc, { now: () => now })
  bindDoc(port, doc, { now: () => now })
  let n = 0
  const write = () => port.write([cellOf('d1', 'temp', T0, ++n)])
  return { doc, port, tracker, clock, write }
}

describe('sync status', () => {
  it('one tab with a server in sync and a tab channel alone: connected, no peers, nothing pending', () => {
    const tabs = memoryTabs()
    const { doc, tracker, write } = boundDoc()
    const server = new FakeServerProvider(doc)
    const detach = tracker.attach(server)
    const channel = new BroadcastChannelProvider(doc, 'fleet', { channel: tabs.open })
    server.status('connecting')
    server.status('connected')
    server.serverAnswered()
    for (let i = 0; i < 50; i++) write()
    // Every update went to the server as it was made: none is pending, however long the tab runs.
    expect(tracker.status()).toEqual({ state: 'connected', lastSync: 1_000, pendingLocalUpdates: 0, peers: 0, refusal: null })
    channel.destroy()
    detach()
  })

  it('a tab channel alone is not connected; a second tab makes it so, and its leaving undoes it', () => {
    const tabs = memoryTabs()
    const a = boundDoc()
    const b = boundDoc()
    const pa = new BroadcastChannelProvider(a.doc, 'fleet', { channel: tabs.open })
    a.write()
    a.write()
    // Two writes, and what the doc held before the provider came (the meta entry bind wrote), as one.
    expect(a.tracker.status()).toEqual({ state: 'connecting', lastSync: null, pendingLocalUpdates: 3, peers: 0, refusal: null })
    a.clock.set(5_000)
    const pb = new BroadcastChannelProvider(b.doc, 'fleet', { channel: tabs.open })
    expect(a.tracker.status()).toEqual({ state: 'connected', lastSync: 5_000, pendingLocalUpdates: 0, peers: 1, refusal: null })
    expect(b.port.cells.size).toBe(1)
    a.write()
    expect(a.tracker.status().pendingLocalUpdates).toBe(0)
    pb.destroy()
    expect(a.tracker.status()).toMatchObject({ state: 'connecting', peers: 0, refusal: null })
    a.write()
    expect(a.tracker.status().pendingLocalUpdates).toBe(1)
    pa.disconnect()
    expect(a.tracker.status().state).toBe('offline')
    pa.destroy()
    expect(a.tracker.status()).toEqual({ state: 'local', lastSync: 5_000, pendingLocalUpdates: 0, peers: 0, refusal: null })
  })

  it('a tab that vanished without a bye stops counting once its presence times out', () => {
    const tabs = memoryTabs()
    const a = boundDoc()
    const b = boundDoc()
    const pa = new BroadcastChannelProvider(a.doc, 'fleet', { channel: tabs.open })
    const pb = new BroadcastChannelProvider(b.doc, 'fleet', { channel: tabs.open })
    expect(a.tracker.status()).toMatchObject({ state: 'connected', peers: 1, refusal: null })
    // b's process dies: no bye is sent, its presence is no longer renewed, and after 30 s
    // y-protocols drops it from a's awareness with origin 'timeout' (done here at once).
    tabs.endpoints.get('fleet')?.clear()
    awarenessProtocol.removeAwarenessStates(pa.awareness, [b.doc.clientID], 'timeout')
    expect(a.tracker.status()).toMatchObject({ state: 'connecting', peers: 0, refusal: null })
    a.write()
    expect(a.tracker.status().pendingLocalUpdates).toBe(1)
    pa.destroy()
    pb.destroy()
  })

  it('a crashed tab that relayed presences stops counting once its own presence times out, though the presences it relayed still show', () => {
    const tabs = memoryTabs()
    const a = boundDoc()
    const b = boundDoc()
    const pa = new BroadcastChannelProvider(a.doc, 'fleet', { channel: tabs.open })
    const pb = new BroadcastChannelProvider(b.doc, 'fleet', { channel: tabs.open })
    // A client both tabs also see through a server (their awareness is the server provider's too):
    // b relays it to a over the channel.
    const server = new awarenessProtocol.Awareness(new Y.Doc())
    server.setLocalState({ user: 'wall' })
    const presence = awarenessProtocol.encodeAwarenessUpdate(server, [server.clientID])
    awarenessProtocol.applyAwarenessUpdate(pb.awareness, presence, 'server')
    awarenessProtocol.applyAwarenessUpdate(pa.awareness, presence, 'server')
    expect(a.tracker.status()).toMatchObject({ state: 'connected', peers: 2 })
    // b's process dies; its own presence times out in a, the server client's does not.
    tabs.endpoints.get('fleet')?.clear()
    awarenessProtocol.removeAwarenessStates(pa.awareness, [b.doc.clientID], 'timeout')
    expect(pa.awareness.getStates().has(server.clientID)).toBe(true)
    // No tab is in sync with a any more; the server's client still shows.
    expect(a.tracker.status()).toMatchObject({ state: 'connecting', peers: 1, refusal: null })
    pa.destroy()
    pb.destroy()
  })

  it('a server: connecting until it answers, offline when the socket drops, pending carried by the next sync', () => {
    const { doc, tracker, clock, write } = boundDoc()
    const server = new FakeServerProvider(doc)
    const detach = tracker.attach(server)
    expect(tracker.status().state).toBe('offline')
    server.status('connecting')
    expect(tracker.status().state).toBe('connecting')
    server.status('connected')
    // The socket is open, but the server has not answered: not connected yet.
    expect(tracker.status().state).toBe('connecting')
    write()
    // The write, and what the doc held before the provider came (the meta entry bind wrote), as one.
    expect(tracker.status().pendingLocalUpdates).toBe(2)
    clock.set(2_000)
    server.serverAnswered()
    expect(tracker.status()).toEqual({ state: 'connected', lastSync: 2_000, pendingLocalUpdates: 0, peers: 0, refusal: null })
    server.status('disconnected')
    write()
    write()
    expect(tracker.status()).toEqual({ state: 'offline', lastSync: 2_000, pendingLocalUpdates: 2, peers: 0, refusal: null })
    // A late 'sync' from a closed socket is no sync.
    server.serverAnswered()
    expect(tracker.status().state).toBe('offline')
    server.status('connected')
    clock.set(3_000)
    server.serverAnswered()
    expect(tracker.status()).toEqual({ state: 'connected', lastSync: 3_000, pendingLocalUpdates: 0, peers: 0, refusal: null })
    detach()
  })

  it('counts a peer seen by two providers once', () => {
    const tabs = memoryTabs()
    const a = boundDoc()
    const b = boundDoc()
    const serverA = new FakeServerProvider(a.doc)
    a.tracker.attach(serverA)
    const pa = new BroadcastChannelProvider(a.doc, 'fleet', { channel: tabs.open })
    const pb = new BroadcastChannelProvider(b.doc, 'fleet', { channel: tabs.open })
    // The server relays b's presence too.
    serverA.status('connected')
    serverA.serverAnswered()
    awarenessProtocol.applyAwarenessUpdate(serverA.awareness, awarenessProtocol.encodeAwarenessUpdate(pb.awareness, [b.doc.clientID]), 'server')
    expect(a.tracker.status().peers).toBe(1)
    pa.destroy()
    pb.destroy()
  })

  it('an acknowledging connection counts its own pending updates; an update is pending while no connection has it', () => {
    const tabs = memoryTabs()
    const { doc, tracker, clock, write } = boundDoc()
    const relay = tracker.open(undefined, { connecting: true, unacknowledged: 0 })
    write()
    relay.update({ unacknowledged: 3 })
    // Its count, not the tracker's: a relay knows what it acknowledged.
    expect(tracker.status()).toEqual({ state: 'connecting', lastSync: null, pendingLocalUpdates: 3, peers: 0, refusal: null })
    relay.update({ connecting: false, connected: true, synced: true })
    clock.set(4_000)
    relay.exchanged()
    relay.update({ unacknowledged: 2 })
    expect(tracker.status()).toEqual({ state: 'connected', lastSync: 4_000, pendingLocalUpdates: 2, peers: 0, refusal: null })
    // Another tab has them all: nothing is pending any more, whatever the relay still owes.
    const peer = boundDoc()
    const here = new BroadcastChannelProvider(doc, 'fleet', { channel: tabs.open })
    const there = new BroadcastChannelProvider(peer.doc, 'fleet', { channel: tabs.open })
    expect(tracker.status().pendingLocalUpdates).toBe(0)
    here.destroy()
    there.destroy()
    relay.update({ connected: false, synced: false, refusal: 'tidemark:refused too-large' })
    expect(tracker.status()).toEqual({ state: 'offline', lastSync: 4_000, pendingLocalUpdates: 2, peers: 0, refusal: 'tidemark:refused too-large' })
    relay.detach()
    expect(tracker.status()).toMatchObject({ state: 'local', pendingLocalUpdates: 0, refusal: null })
  })
})
