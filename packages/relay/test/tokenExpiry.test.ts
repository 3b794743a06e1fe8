/**
 * Tokens expire on open connections: a room connection is closed at its token's `exp` (or at
 * its first message after it, should the deadline's timer be late), with the reason
 * `tidemark:token-expired`, not a refusal; `@tidemark/yjs`'s client joins again with a fresh
 * token, and nothing it wrote is lost or taken twice. The relay runs on a fake clock and fake
 * timers (its `now` and `timers` options), so no test waits for a token to expire.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { connectRelay, type Relay as RelayClient, syncStatusTracker } from '@tidemark/yjs'
import { TokenExpiry } from '../src/gate/tokenExpiry.ts'
import { type Relay, startRelay } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { ManualTimers } from '@tidemark/engine/testing'
import { groupEntry, metric, openRoom, type RoomClient, relaySocket, replicaLog, SECRET, signToken, waitFor } from './support/roomClients.ts'

const FLEET = 'fleet-x'
const ROOM = `${FLEET}/d1`
const MINUTE = 60_000
const DAY = 24 * 60 * MINUTE
/** Rejoins after a close spread over at most 20 ms (the client's own timers, in real time). */
const JITTER = { baseMs: 5, capMs: 20 }

const timers = new ManualTimers(Math.floor(Date.now() / 1000) * 1000)
let relay: Relay
const clients: RelayClient[] = []
const rooms: RoomClient[] = []
const sockets: ReturnType<typeof relaySocket>[] = []
const errors: Error[] = []

/** A token for the fake clock: `exp` is `life` ms after its now. */
function tokenFor(claims: Record<string, unknown>, life: number): Promise<string> {
  return signToken(claims, { expiresAt: Math.floor((timers.now + life) / 1000) })
}

/** `@tidemark/yjs`'s client in `room`, a token of `life` ms read anew for every join; counts the reads. */
function client(room: string, claims: Record<string, unknown>, life: number): { readonly doc: Y.Doc; readonly reads: () => number } {
  let reads = 0
  const relayClient = connectRelay({
    url: relay.url,
    token: () => {
      reads++
      return tokenFor(claims, life)
    },
    WebSocket: WebSocket as unknown as new (url: string) => globalThis.WebSocket,
    jitter: JITTER,
    onError: (error) => errors.push(error),
  })
  clients.push(relayClient)
  const doc = new Y.Doc()
  relayClient.join(doc, room)
  return { doc, reads: () => reads }
}

/** A Hocuspocus provider in `room` with a token good for a day of the fake clock. */
async function provider(room: string, claims: Record<string, unknown>): Promise<RoomClient> {
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const opened = openRoom(socket, room, await tokenFor(claims, DAY))
  rooms.push(opened)
  return opened
}

const device = (id: string) => ({ sub: id, role: 'device', rooms: [`${FLEET}/${id}`], replicas: [id], sources: [id] })
const dashboard = { sub: 'ops', role: 'dashboard', rooms: [`${FLEET}/*`] }

beforeAll(async () => {
  relay = await startRelay({
    port: 0,
    store: { dataDir: freshDataDir() },
    auth: { secret: SECRET },
    persistence: { writeWindowMs: 20 },
    log: () => undefined,
    now: () => timers.now,
    timers,
  })
})

afterEach(() => {
  for (const c of clients.splice(0)) c.destroy()
  for (const r of rooms.splice(0)) r.destroy()
  for (const s of sockets.splice(0)) s.destroy()
  expect(errors.splice(0)).toEqual([])
})

afterAll(async () => {
  await relay?.close()
  removeDataDirs()
})

describe('a token that expires while its room is open', () => {
  it('closes a reading dashboard at exp; it joins again with a fresh token and reads on', async () => {
    const before = await metric(relay.httpUrl, 'tidemark_relay_tokens_expired_total')
    const writer = await provider(ROOM, device('d1'))
    await waitFor(() => writer.synced(), 'the device synced')
    const reader = client(ROOM, dashboard, MINUTE)
    replicaLog(writer.doc, 'd1').push([groupEntry('d1', 0)])
    await waitFor(() => replicaLog(reader.doc, 'd1').length === 1, 'the first entry on the dashboard')
    expect(reader.reads()).toBe(1)

    // Just before exp nothing happens; at exp the relay closes the room, and the client joins again.
    timers.advance(MINUTE - 1_000)
    expect(await metric(relay.httpUrl, 'tidemark_relay_tokens_expired_total')).toBe(before)
    timers.advance(1_000)
    await waitFor(() => reader.reads() === 2, 'the dashboard read a fresh token')
    expect(await metric(relay.httpUrl, 'tidemark_relay_tokens_expired_total')).toBe(before + 1)
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="token-expired"}')).toBe(0)

    replicaLog(writer.doc, 'd1').push([groupEntry('d1', MINUTE)])
    await waitFor(() => replicaLog(reader.doc, 'd1').length === 2, 'the second entry on the dashboard, over the fresh token')
    expect(syncStatusTracker(reader.doc).status()).toMatchObject({ refusal: null })
  })

  it('takes no write after exp even when the deadline is late; the writer joins again and its write arrives once', async () => {
    const reader = await provider(`${FLEET}/d2`, dashboard)
    const writer = client(`${FLEET}/d2`, device('d2'), MINUTE)
    await waitFor(() => reader.synced() && writer.reads() === 1, 'both joined')
    replicaLog(writer.doc, 'd2').push([groupEntry('d2', 0)])
    await waitFor(() => replicaLog(reader.doc, 'd2').length === 1, 'the first entry on the dashboard')

    // The clock passes exp but no timer runs: the next message finds the token expired.
    const before = await metric(relay.httpUrl, 'tidemark_relay_tokens_expired_total')
    timers.now += MINUTE
    replicaLog(writer.doc, 'd2').push([groupEntry('d2', MINUTE)])
    await waitFor(() => writer.reads() === 2, 'the device read a fresh token')
    expect(await metric(relay.httpUrl, 'tidemark_relay_tokens_expired_total')).toBe(before + 1)
    await waitFor(() => replicaLog(reader.doc, 'd2').length === 2, 'the write sent again over the fresh token')
    expect(replicaLog(reader.doc, 'd2').toJSON()).toEqual([groupEntry('d2', 0), groupEntry('d2', MINUTE)])
    await waitFor(() => syncStatusTracker(writer.doc).status().pendingLocalUpdates === 0, 'the write acknowledged')
    expect(syncStatusTracker(writer.doc).status()).toMatchObject({ state: 'connected', refusal: null })
  })
})

describe('a connection that ends before its token', () => {
  it('is not closed at its exp once it left, and a write sent after exp is not applied', async () => {
    const before = await metric(relay.httpUrl, 'tidemark_relay_tokens_expired_total')
    // A provider with a token string: closed at exp, it cannot join again, so what it sent after exp shows.
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const late = openRoom(socket, `${FLEET}/d3`, await tokenFor(device('d3'), MINUTE))
    rooms.push(late)
    await waitFor(() => late.synced(), 'd3 synced')
    replicaLog(late.doc, 'd3').push([groupEntry('d3', 0)])
    const leavingSocket = relaySocket(relay.url)
    sockets.push(leavingSocket)
    const leaving = openRoom(leavingSocket, `${FLEET}/d4`, await tokenFor(device('d4'), MINUTE))
    rooms.push(leaving)
    await waitFor(() => leaving.synced(), 'd4 synced')
    leaving.destroy()
    leavingSocket.destroy()
    // Its close handled: a connection opened after it is in sync.
    const barrier = await provider(`${FLEET}/d4`, dashboard)
    await waitFor(() => barrier.synced(), 'a later connection synced')

    timers.now += MINUTE
    replicaLog(late.doc, 'd3').push([groupEntry('d3', MINUTE)])
    await waitFor(() => late.closed.includes('tidemark:token-expired'), 'd3 closed at its first message after exp')
    // d4's deadline (at the same exp) was disarmed when it left: running the timers closes nothing more.
    timers.advance(MINUTE)
    expect(await metric(relay.httpUrl, 'tidemark_relay_tokens_expired_total')).toBe(before + 1)
    const reader = await provider(`${FLEET}/d3`, dashboard)
    await waitFor(() => reader.synced(), 'a reader of d3 synced')
    expect(replicaLog(reader.doc, 'd3').toJSON()).toEqual([groupEntry('d3', 0)])
  })
})

describe('TokenExpiry', () => {
  it('runs a deadline once at its time, in steps past what one timer can wait, and never after disarm or close', () => {
    const clock = new ManualTimers(0)
    const expiry = new TokenExpiry(() => clock.now, clock)
    const fired: string[] = []
    const far = {}
    const near = {}
    const gone = {}
    expiry.arm(far, 40 * DAY, () => fired.push('far'))
    expiry.arm(near, MINUTE, () => fired.push('near'))
    expiry.arm(gone, MINUTE, () => fired.push('gone'))
    expiry.disarm(gone)
    clock.advance(MINUTE)
    expect(fired).toEqual(['near'])
    // 40 days is past 2^31 − 1 ms: armed again when the first timer ends, fired at its time.
    clock.advance(30 * DAY)
    expect(fired).toEqual(['near'])
    expect(expiry.size).toBe(1)
    clock.advance(10 * DAY - MINUTE - 1)
    expect(fired).toEqual(['near'])
    clock.advance(1)
    expect(fired).toEqual(['near', 'far'])
    // A deadline already past runs at once; after close nothing is armed.
    expiry.arm(near, 0, () => fired.push('past'))
    expect(fired).toEqual(['near', 'far', 'past'])
    expiry.arm(far, clock.now + MINUTE, () => fired.push('late'))
    expiry.close()
    clock.advance(DAY)
    expect(fired).toEqual(['near', 'far', 'past'])
    expect(clock.pending).toEqual([])
  })
})
