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

describe('foldSyncStatus', () => {
  it('is connected only when every doc is, sums what is pending, keeps the first refusal', () => {
    expect(foldSyncStatus([])).toBeNull()
    const one = status({ state: 'offline', refusal: 'tidemark:token-expired' })
    expect(foldSyncStatus([one])).toBe(one)
    expect(foldSyncStatus([status({ lastSync: 5, pendingLocalUpdates: 2, peers: 1 }), status({ lastSync: 9, pendingLocalUpdates: 3, peers: 2 })])).toEqual(
      status({ lastSync: 9, pendingLocalUpdates: 5, peers: 3 }),
    )
    expect(foldSyncStatus([status({}), status({ state: 'connecting' })])?.state).toBe('connecting')
    expect(foldSyncStatus([status({ state: 'offline' }), status({ state: 'offline' })])?.state).toBe('offline')
    expect(foldSyncStatus([status({}), status({ state: 'offline' })])?.state).toBe('connecting')
    // A refused doc shows through `refusal` and does not hold the others' state down.
    expect(foldSyncStatus([status({}), status({ state: 'offline', refusal: 'tidemark:room-not-allowed fleet-b/d09' }), status({ state: 'offline', refusal: 'second' })])).toEqual(
      status({ refusal: 'tidemark:room-not-allowed fleet-b/d09' }),
    )
    expect(foldSyncStatus([status({ state: 'offline', refusal: 'a' }), status({ state: 'local' })])?.state).toBe('offline')
    expect(foldSyncStatus([status({ state: 'local' }), status({ state: 'local' })])?.state).toBe('local')
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

  it('sums the doc sizes', () => {
    const port = fakePort('a')
    const [a, b] = [new Y.Doc(), new Y.Doc()]
    bindDoc(port, a, { measureEvery: 0 })
    port.write([cellOf('d1', 'temp', 0, 1)])
    bindDoc(port, b, { measureEvery: 0 })
    expect(port.statuses.at(-1)?.docBytes).toBe(Y.encodeStateAsUpdate(a).byteLength + Y.encodeStateAsUpdate(b).byteLength)
  })
})
