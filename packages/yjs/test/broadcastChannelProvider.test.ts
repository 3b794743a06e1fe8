import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import * as awarenessProtocol from 'y-protocols/awareness'
import { bindDoc } from '../src/binding/bindDoc.ts'
import { BroadcastChannelProvider, type OpenTabChannel } from '../src/transport/broadcastChannelProvider.ts'
import { syncStatusTracker } from '../src/transport/syncStatusTracker.ts'
import { boundReplicas, cellOf, cellTable, clockOf, fakePort } from './fakePort.ts'

/** Global BroadcastChannels opened by this file's tests, for a name no other test shares. */
let globalChannels = 0

/** In-memory tabs: frames are queued and delivered by `flush`, so tests control the interleaving. */
function memoryTabs() {
  const endpoints = new Map<string, Set<(frame: Uint8Array) => void>>()
  const queue: { from: (frame: Uint8Array) => void; name: string; frame: Uint8Array }[] = []
  let bytes = 0
  /** Endpoints of tabs that crashed: they neither post nor receive, and said no bye. */
  const crashed = new Set<(frame: Uint8Array) => void>()
  let last: { name: string; receive: (frame: Uint8Array) => void } | null = null
  const open: OpenTabChannel = (name, receive) => {
    let set = endpoints.get(name)
    if (set === undefined) {
      set = new Set()
      endpoints.set(name, set)
    }
    set.add(receive)
    last = { name, receive }
    return {
      post: (frame) => {
        if (crashed.has(receive)) return
        bytes += frame.byteLength
        queue.push({ from: receive, name, frame })
      },
      close: () => endpoints.get(name)?.delete(receive),
    }
  }
  const flush = (): number => {
    let delivered = 0
    while (queue.length > 0) {
      const { from, name, frame } = queue.shift() as (typeof queue)[number]
      for (const receive of endpoints.get(name) ?? []) {
        if (receive !== from) receive(frame)
      }
      delivered++
    }
    return delivered
  }
  const crashLast = (): void => {
    if (last === null) return
    crashed.add(last.receive)
    endpoints.get(last.name)?.delete(last.receive)
  }
  return { open, flush, crashLast, bytes: () => bytes, inject: (name: string, frame: Uint8Array) => queue.push({ from: () => {}, name, frame }) }
}

const T0 = 1_700_000_040_000
const MINUTE = 60_000

describe('BroadcastChannelProvider', () => {
  it('syncs two bound docs through y-protocols sync messages', () => {
    const tabs = memoryTabs()
    const { docA, docB, a, b } = boundReplicas()
    a.write([cellOf('d1', 'temp', T0, 2)], [clockOf('d1', 'a', T0 + 2, 2)])
    const pa = new BroadcastChannelProvider(docA, 'fleet', { channel: tabs.open })
    const pb = new BroadcastChannelProvider(docB, 'fleet', { channel: tabs.open })
    tabs.flush()
    expect(pa.synced && pb.synced).toBe(true)
    expect(cellTable(b)).toEqual(cellTable(a))
    b.write([cellOf('d2', 'temp', T0, 5)], [clockOf('d2', 'b', T0 + 5, 5)])
    tabs.flush()
    expect(cellTable(a)).toEqual(cellTable(b))
    expect(pa.peers()).toBe(1)
    expect(Y.encodeStateVector(docA)).toEqual(Y.encodeStateVector(docB))
    pa.destroy()
    pb.destroy()
  })

  it('catches up after a disconnect by exchanging state vectors, not the full history', () => {
    const tabs = memoryTabs()
    const { docA, docB, a, b } = boundReplicas()
    const pa = new BroadcastChannelProvider(docA, 'fleet', { channel: tabs.open })
    const pb = new BroadcastChannelProvider(docB, 'fleet', { channel: tabs.open })
    // Twenty windows: a's later write rewrites one of them (one group entry), not the whole doc.
    for (let n = 1; n <= 40; n++) a.write(Array.from({ length: 20 }, (_, k) => cellOf('d1', 'temp', T0 + k * MINUTE, n)), [clockOf('d1', 'a', T0 + n, n)])
    tabs.flush()
    pb.disconnect()
    expect(pb.synced).toBe(false)
    b.write([cellOf('d2', 'temp', T0, 1)], [clockOf('d2', 'b', T0 + 1, 1)])
    a.write([cellOf('d1', 'temp', T0, 41)], [clockOf('d1', 'a', T0 + 41, 41)])
    tabs.flush()
    // b's own cell, and a's twenty as they stood before the disconnect
    expect(b.cells.size).toBe(21)
    expect(b.clocks.get('d1')?.version).toBe(40)
    const before = tabs.bytes()
    pb.connect()
    tabs.flush()
    const resync = tabs.bytes() - before
    expect(cellTable(a)).toEqual(cellTable(b))
    expect(resync).toBeLessThan(Y.encodeStateAsUpdate(docA).byteLength / 2)
    pa.destroy()
    pb.destroy()
  }, 30_000)

  it('reports frames and updates that cannot be read, and keeps syncing', () => {
    const tabs = memoryTabs()
    const { docA, docB, a, b } = boundReplicas()
    const pa = new BroadcastChannelProvider(docA, 'fleet', { channel: tabs.open })
    const pb = new BroadcastChannelProvider(docB, 'fleet', { channel: tabs.open })
    const errors: unknown[] = []
    pb.on('error', (e) => errors.push(e))
    tabs.flush()
    // an unknown frame kind; a sync update frame whose update is garbage; a truncated frame
    tabs.inject('fleet', Uint8Array.from([9, 1, 0]))
    tabs.inject('fleet', Uint8Array.from([0, 5, 0, 2, 4, 255, 255, 255, 255]))
    tabs.inject('fleet', Uint8Array.from([0, 5]))
    tabs.flush()
    expect(errors.length).toBe(3)
    expect(b.anomalies.filter((x) => x.reason === 'invalid_remote_cell').length).toBe(3)
    a.write([cellOf('d1', 'temp', T0, 1)], [clockOf('d1', 'a', T0 + 1, 1)])
    tabs.flush()
    expect(cellTable(b)).toEqual(cellTable(a))
    pa.destroy()
    pb.destroy()
  })

  it('reports connection, sync, peers and pending local updates to the doc status', () => {
    const tabs = memoryTabs()
    const docA = new Y.Doc()
    const docB = new Y.Doc()
    let now = 1_000
    const tracker = syncStatusTracker(docA, { now: () => now })
    const a = fakePort('a')
    // Measured after every batch: docBytes is the doc's encoded size as it stands.
    bindDoc(a, docA, { now: () => now, measureEvery: 0 })
    expect(tracker.status().state).toBe('local')
    const pa = new BroadcastChannelProvider(docA, 'fleet', { channel: tabs.open })
    // The channel is open, but no other tab has answered: not connected.
    expect(tracker.status().state).toBe('connecting')
    a.write([cellOf('d1', 'temp', T0, 1)])
    a.write([cellOf('d1', 'temp', T0, 2)])
    // Two writes, and what the doc held before the provider came, as one.
    expect(tracker.status().pendingLocalUpdates).toBe(3)
    now = 5_000
    const pb = new BroadcastChannelProvider(docB, 'fleet', { channel: tabs.open })
    tabs.flush()
    expect(tracker.status()).toEqual({ state: 'connected', lastSync: 5_000, pendingLocalUpdates: 0, peers: 1, refusal: null })
    expect(a.statuses.at(-1)?.status).toEqual(tracker.status())
    expect(a.statuses.at(-1)?.docBytes).toBe(Y.encodeStateAsUpdate(docA).byteLength)
    pa.disconnect()
    expect(tracker.status().state).toBe('offline')
    a.write([cellOf('d1', 'temp', T0, 3)])
    expect(tracker.status().pendingLocalUpdates).toBe(1)
    pa.destroy()
    pb.destroy()
    expect(tracker.status().state).toBe('local')
  })

  it('a tab whose presence timed out while another was still there stops counting: when that one leaves, the doc is no longer in sync', () => {
    const tabs = memoryTabs()
    const [docA, docB, docC] = [new Y.Doc(), new Y.Doc(), new Y.Doc()]
    const tracker = syncStatusTracker(docA)
    const pa = new BroadcastChannelProvider(docA, 'fleet', { channel: tabs.open })
    const pb = new BroadcastChannelProvider(docB, 'fleet', { channel: tabs.open })
    tabs.flush()
    const pc = new BroadcastChannelProvider(docC, 'fleet', { channel: tabs.open })
    tabs.flush()
    expect(pa.peers()).toBe(2)
    // C crashes (no bye); 30 s later y-protocols times its presence out on A and B.
    tabs.crashLast()
    awarenessProtocol.removeAwarenessStates(pa.awareness, [docC.clientID], 'timeout')
    awarenessProtocol.removeAwarenessStates(pb.awareness, [docC.clientID], 'timeout')
    expect(pa.peers()).toBe(1)
    expect(tracker.status().state).toBe('connected')
    // B leaves with a bye: nobody is left to be in sync with.
    pb.destroy()
    tabs.flush()
    expect(pa.peers()).toBe(0)
    expect(tracker.status().state).toBe('connecting')
    docA.getMap('m').set('k', 1)
    expect(tracker.status().pendingLocalUpdates).toBe(1)
    pa.destroy()
    pc.destroy()
  })

  it('syncs through the Node 20 global BroadcastChannel', async () => {
    const { docA, docB, a, b } = boundReplicas()
    a.write([cellOf('d1', 'temp', T0, 4)], [clockOf('d1', 'a', T0 + 4, 4)])
    const name = `tidemark-test-broadcastChannelProvider-${++globalChannels}`
    const pa = new BroadcastChannelProvider(docA, name)
    const synced = new Promise<void>((resolve) => pa.on('sync', (s) => s && resolve()))
    const pb = new BroadcastChannelProvider(docB, name)
    await withTimeout(synced, 5_000)
    await withTimeout(
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (b.cells.size === 1) resolve()
          else docB.once('update', check)
        }
        check()
      }),
      5_000,
    )
    expect(cellTable(b)).toEqual(cellTable(a))
    pa.destroy()
    pb.destroy()
  })
})

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
