/**
 * Several docs bound to one engine give it one sync status: the fold of all of them, whichever
 * reported last.
 */
import type { SyncStatus } from '@tidemark/engine'
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { bindDoc } from '../src/binding/bindDoc.ts'
import { foldSyncStatus } from '../src/binding/engineSyncStatus.ts'
import { syncStatusTracker } from '../src/transport/syncStatusTracker.ts'
import { cellOf, fakePort } from './fakePort.ts'

const status = (patch: Partial<SyncStatus>): SyncStatus => ({ state: 'connected', lastSync: null, pendingLocalUpdates: 0, peers: 0, refusal: null, ...patch })

const followed = (patch: Partial<SyncStatus>) => ({ status: status(patch), writes: false })
const written = (patch: Partial<SyncStatus>) => ({ status: status(patch), writes: true })

describe('foldSyncStatus', () => {
  it('read-only docs (rooms followed): connected only when every one is, the first refusal shown', () => {
    expect(foldSyncStatus([])).toBeNull()
    const one = followed({ state: 'offline', refusal: 'tidemark:token-expired' })
    expect(foldSyncStatus([one])).toBe(one.status)
    expect(foldSyncStatus([followed({ lastSync: 5, peers: 1 }), followed({ lastSync: 9, peers: 2 })])).toEqual(status({ lastSync: 9, peers: 3 }))
    expect(foldSyncStatus([followed({}), followed({ state: 'connecting' })])?.state).toBe('connecting')
    expect(foldSyncStatus([followed({ state: 'offline' }), followed({ state: 'offline' })])?.state).toBe('offline')
    expect(foldSyncStatus([followed({}), followed({ state: 'offline' })])?.state).toBe('connecting')
    // A refused room shows through `refusal` and does not hold the others' state down.
    expect(
      foldSyncStatus([followed({}), followed({ state: 'offline', refusal: 'tidemark:room-not-allowed fleet-b/d09' }), followed({ state: 'offline', refusal: 'second' })]),
    ).toEqual(status({ refusal: 'tidemark:room-not-allowed fleet-b/d09' }))
    expect(foldSyncStatus([followed({ state: 'offline', refusal: 'a' }), followed({ state: 'local' })])?.state).toBe('offline')
    expect(foldSyncStatus([followed({ state: 'local' }), followed({ state: 'local' })])?.state).toBe('local')
  })

  it('writable docs (a relay room and a tab doc of one engine) carry the same writes: in sync when either is', () => {
    const relayDown = written({ state: 'offline', pendingLocalUpdates: 4 })
    const tabAnswered = written({ state: 'connected', pendingLocalUpdates: 0 })
    expect(foldSyncStatus([relayDown, tabAnswered])).toEqual(status({ state: 'connected', pendingLocalUpdates: 0 }))
    const aloneInTabs = written({ state: 'connecting', pendingLocalUpdates: 5 })
    expect(foldSyncStatus([relayDown, aloneInTabs])).toEqual(status({ state: 'connecting', pendingLocalUpdates: 4 }))
    const refused = written({ state: 'offline', pendingLocalUpdates: 4, refusal: 'tidemark:refused foreign-source s9' })
    expect(foldSyncStatus([refused, tabAnswered])).toEqual(status({ state: 'connected', refusal: 'tidemark:refused foreign-source s9' }))
    // A device that also follows rooms: its own writes and every followed room.
    expect(foldSyncStatus([relayDown, tabAnswered, followed({ state: 'connecting' })])?.state).toBe('connecting')
    expect(foldSyncStatus([relayDown, tabAnswered, followed({})])?.state).toBe('connected')
  })
})

describe('one engine, several docs', () => {
  it("reports the fold of its docs' statuses, whichever reported last", () => {
    const port = fakePort('wall')
    const [a, b] = [new Y.Doc(), new Y.Doc()]
    bindDoc(port, a, { readOnly: true })
    const binding = bindDoc(port, b, { readOnly: true })
    const last = () => port.statuses.at(-1)?.status
    const connectionA = syncStatusTracker(a).open()
    const connectionB = syncStatusTracker(b).open()
    connectionA.update({ connected: true, synced: true, unacknowledged: 0 })
    connectionB.update({ connecting: true, unacknowledged: 1 })
    // b reported last and is connecting; a is in sync: the engine is connecting, 1 pending.
    connectionA.update({ unacknowledged: 0 })
    expect(last()).toMatchObject({ state: 'connecting', pendingLocalUpdates: 1, refusal: null })
    connectionB.update({ connecting: false, connected: true, synced: true, unacknowledged: 0 })
    expect(last()).toMatchObject({ state: 'connected', pendingLocalUpdates: 0 })
    connectionB.update({ connected: false, synced: false, refusal: 'tidemark:refused read-only' })
    expect(last()).toMatchObject({ state: 'connected', refusal: 'tidemark:refused read-only' })
    // Unbound, b leaves the fold.
    binding.destroy()
    expect(last()).toMatchObject({ state: 'connected', refusal: null })
  })

  it('is local again once its last doc is unbound, keeping when it last synced', () => {
    const port = fakePort('device')
    let clock = 1_000
    const doc = new Y.Doc()
    const binding = bindDoc(port, doc, { now: () => clock })
    const connection = syncStatusTracker(doc).open()
    clock = 2_000
    connection.update({ connected: true, synced: true, unacknowledged: 0 })
    expect(port.statuses.at(-1)?.status).toMatchObject({ state: 'connected', lastSync: 2_000 })
    clock = 3_000
    connection.update({ unacknowledged: 2, refusal: 'tidemark:token-expired' })
    binding.destroy()
    // No transport carries this engine's state now: not connected, nothing counted as on its way; the last sync kept.
    expect(port.statuses.at(-1)).toEqual({ status: { state: 'local', lastSync: 2_000, pendingLocalUpdates: 0, peers: 0, refusal: null }, docBytes: 0 })
    connection.detach()
  })

  it('keeps the latest sync of any of its docs once the last is unbound', () => {
    const port = fakePort('device')
    let clock = 1_000
    const [a, b] = [new Y.Doc(), new Y.Doc()]
    const bindingA = bindDoc(port, a, { now: () => clock })
    const connectionA = syncStatusTracker(a).open()
    connectionA.update({ connected: true, synced: true, unacknowledged: 0 })
    const bindingB = bindDoc(port, b, { now: () => clock })
    clock = 9_000
    connectionA.exchanged()
    expect(port.statuses.at(-1)?.status.lastSync).toBe(9_000)
    bindingA.destroy()
    bindingB.destroy()
    expect(port.statuses.at(-1)?.status).toEqual({ state: 'local', lastSync: 9_000, pendingLocalUpdates: 0, peers: 0, refusal: null })
    connectionA.detach()
  })

  it('sums the doc sizes', () => {
    const port = fakePort('a')
    const [a, b] = [new Y.Doc(), new Y.Doc()]
    bindDoc(port, a, { measureEvery: 0 })
    port.write([cellOf('d1', 'temp', 0, 1)])
    bindDoc(port, b, { measureEvery: 0 })
    expect(port.statuses.at(-1)?.docBytes).toBe(Y.encodeStateAsUpdate(a).byteLength + Y.encodeStateAsUpdate(b).byteLength)
  })
})
