/**
 * `@tidemark/yjs`'s relay client against a real relay started in-process: what it sends when
 * nothing is left to sync, how fast it talks in a room, and what it tells the app of a presence
 * the relay does not show. The relay's deadlines and rate run on
 * one fake clock, the client's reconnects and pace on another, so no test waits for time to pass.
 */
import { afterEach, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { Awareness } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { createEngine, manual, type TidemarkEngine, tumbling } from '@tidemark/engine'
import { bindDoc, connectRelay, type Relay as RelayClient, syncStatusTracker } from '@tidemark/yjs'
import { ManualTimers } from '@tidemark/engine/testing'
import { type Relay, startRelay } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { authFrame, presenceText, updateFrame } from './support/hocuspocusFrames.ts'
import { deviceToken, groupEntry, metric, rawSocket, replicaLog, SECRET, signToken, waitFor, waitUntil } from './support/roomClients.ts'

const FLEET = 'fleet-loop'
const AUTH_TIMEOUT_MS = 1_000

const relays: Relay[] = []
const clients: RelayClient[] = []

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy()
  for (const relay of relays.splice(0)) await relay.close()
  removeDataDirs()
})

/** A relay on `relayTimers` (its auth deadline, its clock for the rate). */
async function relayOn(relayTimers: ManualTimers, limits: Record<string, number> = {}): Promise<Relay> {
  const relay = await startRelay({
    port: 0,
    store: { dataDir: freshDataDir() },
    auth: { secret: SECRET },
    log: () => undefined,
    now: relayTimers.read,
    timers: relayTimers,
    limits: { authTimeoutMs: AUTH_TIMEOUT_MS, ...limits },
  })
  relays.push(relay)
  return relay
}

/** `ws` counting the sockets made and opened. */
function countingWebSocket(): { readonly WebSocket: new (url: string) => globalThis.WebSocket; made(): number; opened(): number } {
  let made = 0
  let opened = 0
  class Counting extends WebSocket {
    constructor(url: string) {
      super(url)
      made++
      this.once('open', () => opened++)
    }
  }
  return { WebSocket: Counting as unknown as new (url: string) => globalThis.WebSocket, made: () => made, opened: () => opened }
}

/** The client's jitter on `timers` (a window's middle for every delay). */
const jitterOn = (timers: ManualTimers) => ({
  baseMs: 100,
  capMs: 1_000,
  random: () => 0.5,
  setTimeout: (run: () => void, ms: number) => timers.setTimeout(run, ms),
  clearTimeout: (handle: unknown) => timers.clearTimeout(handle),
  now: timers.read,
})

describe('relay client: a refused room leaves nothing to connect for', () => {
  it('does not keep opening sockets the relay closes as auth-timeout once its only room is refused', async () => {
    const relayTimers = new ManualTimers(Date.now())
    const clientTimers = new ManualTimers(0)
    const relay = await relayOn(relayTimers)
    const sockets = countingWebSocket()
    const errors: Error[] = []
    // A token signed with another secret: refused (bad-signature), never retried.
    const token = await signToken({ sub: 'd1', role: 'device', rooms: [`${FLEET}/d1`], replicas: ['d1'] }, { secret: new TextEncoder().encode('not the relay secret, 32 bytes or more') })
    const client = connectRelay({ url: relay.url, token, WebSocket: sockets.WebSocket, jitter: jitterOn(clientTimers), onError: (error) => errors.push(error) })
    clients.push(client)
    const doc = new Y.Doc()
    client.join(doc, `${FLEET}/d1`)
    await waitFor(() => syncStatusTracker(doc).status().refusal !== null, 'the room refused')
    expect(syncStatusTracker(doc).status()).toMatchObject({ state: 'offline', refusal: 'tidemark:bad-signature' })

    // The relay closes a socket that opened no room within its deadline; whatever the client
    // schedules then runs. Ten rounds of that: a client with nothing to sync should stop.
    const timeouts = (): number => errors.filter((error) => error.message.includes('4408')).length
    for (let round = 1; round <= 10; round++) {
      if (sockets.opened() < round) break // no socket opened this round: nothing more to close
      // Its deadline, then the grace a closing socket has before the relay cuts it.
      relayTimers.advance(AUTH_TIMEOUT_MS + 1_000)
      await waitFor(() => timeouts() === round, `auth-timeout close ${round}`)
      clientTimers.advance(10_000)
      await waitFor(() => sockets.opened() === sockets.made(), 'the sockets made are open')
    }
    expect({ socketsOpened: sockets.opened(), authTimeouts: timeouts() }).toEqual({ socketsOpened: 1, authTimeouts: 1 })

    // A room joined later needs a socket again: the client opens one for it.
    const other = new Y.Doc()
    client.join(other, `${FLEET}/d2`)
    await waitFor(() => syncStatusTracker(other).status().refusal !== null, 'the second room refused on a new socket')
    expect(sockets.opened()).toBe(2)
  })
})

describe('relay client: presence at the room pace', () => {
  it("sends a task's presence changes within the relay's rate: a device updating its presence per reading is not refused", async () => {
    const relayTimers = new ManualTimers(Date.now())
    const clientTimers = new ManualTimers(0)
    // The relay's bucket does not refill on its fake clock: 1,000 messages per room connection (its default burst).
    const relay = await relayOn(relayTimers)
    const errors: Error[] = []
    const ws = WebSocket as unknown as new (url: string) => globalThis.WebSocket
    const deviceToken = await signToken({ sub: 'd1', role: 'device', rooms: [`${FLEET}/d1`], replicas: ['d1'], sources: ['d1-temp'] })
    const device = connectRelay({ url: relay.url, token: deviceToken, WebSocket: ws, jitter: jitterOn(clientTimers), onError: (error) => errors.push(error) })
    clients.push(device)
    const doc = new Y.Doc()
    const awareness = new Awareness(doc)
    device.join(doc, `${FLEET}/d1`, { awareness })
    // A dashboard in the room, watching the device's presence.
    const dashboardToken = await signToken({ sub: 'ops', role: 'dashboard', rooms: [`${FLEET}/*`] })
    const dashboard = connectRelay({ url: relay.url, token: dashboardToken, WebSocket: ws, jitter: jitterOn(clientTimers), onError: (error) => errors.push(error) })
    clients.push(dashboard)
    const wall = new Y.Doc()
    const seen = new Awareness(wall)
    dashboard.join(wall, `${FLEET}/d1`, { awareness: seen })
    await waitFor(() => syncStatusTracker(doc).status().state === 'connected' && syncStatusTracker(wall).status().state === 'connected', 'both in sync')

    // Batches of 1,500 readings in one task each, the presence showing the last one: the doc's
    // updates of one task go as one message, and so should its presence.
    const reading = (): unknown => (seen.getStates().get(awareness.clientID) as { reading?: number } | undefined)?.reading
    const rateLimited = (): number => errors.filter((error) => error.message.includes('rate-limited')).length
    for (let batch = 1; batch <= 3; batch++) {
      for (let i = 1; i <= 1_500; i++) awareness.setLocalStateField('reading', batch * 10_000 + i)
      // Polled with the client's clock moving on while the device's room is not connected, so a
      // room the relay closed meanwhile joins again. Only then: moved on at every poll, a slow
      // machine's polls would carry the client's clock past its token's exp.
      await waitFor(() => {
        if (syncStatusTracker(doc).status().state !== 'connected') clientTimers.advance(10_000)
        const back = rateLimited() === batch && syncStatusTracker(doc).status().state === 'connected'
        return reading() === batch * 10_000 + 1_500 || back
      }, `the dashboard sees the last reading of batch ${batch}, or the device is back after a refusal`)
    }
    seen.destroy()
    awareness.destroy()
    expect({ rateLimitedRooms: rateLimited(), errors: errors.map((error) => error.message) }).toEqual({ rateLimitedRooms: 0, errors: [] })
  })

  it("keeps a room's updates and presence together within the relay's rate: a device doing both at full pace is not refused", async () => {
    const relayTimers = new ManualTimers(Date.now())
    const clientTimers = new ManualTimers(0)
    // The relay's rate is the client's pace: 10 messages a second, a burst of 22: the client's 20,
    // and the step 1 and step 2 a connection starts with, which go outside its pace (21 refuses).
    const relay = await relayOn(relayTimers, { updatesPerSecond: 10, updateBurst: 22 })
    const errors: Error[] = []
    const ws = WebSocket as unknown as new (url: string) => globalThis.WebSocket
    const deviceToken = await signToken({ sub: 'd1', role: 'device', rooms: [`${FLEET}/d1`], replicas: ['d1'], sources: ['d1-temp'] })
    const device = connectRelay({ url: relay.url, token: deviceToken, WebSocket: ws, updatesPerSecond: 10, jitter: jitterOn(clientTimers), onError: (error) => errors.push(error) })
    clients.push(device)
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'd1' }) as TidemarkEngine
    const doc = new Y.Doc()
    bindDoc(engine, doc)
    const awareness = new Awareness(doc)
    device.join(doc, `${FLEET}/d1`, { awareness })
    const dashboardToken = await signToken({ sub: 'ops', role: 'dashboard', rooms: [`${FLEET}/*`] })
    const dashboard = connectRelay({ url: relay.url, token: dashboardToken, WebSocket: ws, jitter: jitterOn(clientTimers), onError: (error) => errors.push(error) })
    clients.push(dashboard)
    const seen = new Awareness(new Y.Doc())
    dashboard.join(seen.doc, `${FLEET}/d1`, { awareness: seen })
    await waitFor(() => syncStatusTracker(doc).status().state === 'connected' && syncStatusTracker(seen.doc).status().state === 'connected', 'both in sync')

    const reading = (): unknown => (seen.getStates().get(awareness.clientID) as { reading?: number } | undefined)?.reading
    const pending = (): number => syncStatusTracker(doc).status().pendingLocalUpdates
    const rateLimited = (): number => errors.filter((error) => error.message.includes('rate-limited')).length
    /** A reading ingested and shown in the presence, in one task. */
    const write = (i: number): void => {
      engine.ingest([{ id: `r${i}`, source: 'd1-temp', seq: i, ts: 1_700_000_040_000 + i * 100, key: 'temp', value: i }])
      awareness.setLocalStateField('reading', i)
    }
    // 40 tasks at once, then one every 100 ms (both clocks moving on) for 3 s.
    for (let i = 1; i <= 40; i++) {
      write(i)
      await new Promise((resolve) => setImmediate(resolve))
    }
    for (let i = 41; i <= 70; i++) {
      write(i)
      relayTimers.advance(100)
      clientTimers.advance(100)
      // Each 100 ms one message goes, the presence and the updates in turns.
      await waitFor(() => pending() === 0 || reading() === i || rateLimited() > 0, `the message of ${i} handled`)
    }
    await waitFor(() => {
      relayTimers.advance(100)
      clientTimers.advance(100)
      return (pending() === 0 && reading() === 70) || rateLimited() > 0
    }, 'the last reading acknowledged and shown')
    seen.destroy()
    awareness.destroy()
    expect({ rateLimitedRooms: rateLimited(), errors: errors.map((error) => error.message) }).toEqual({ rateLimitedRooms: 0, errors: [] })
  })
})

describe('relay client: a presence the relay does not show', () => {
  it("tells the app once per connection that the room shows as many presences as the relay allows, and the room syncs on", async () => {
    const relayTimers = new ManualTimers(Date.now())
    const clientTimers = new ManualTimers(0)
    const relay = await relayOn(relayTimers)
    const ws = WebSocket as unknown as new (url: string) => globalThis.WebSocket
    const room = `${FLEET}/d9`
    const dashboardToken = await signToken({ sub: 'ops', role: 'dashboard', rooms: [`${FLEET}/*`] })
    const watcherErrors: Error[] = []
    const watcher = connectRelay({ url: relay.url, token: dashboardToken, WebSocket: ws, jitter: jitterOn(clientTimers), onError: (error) => watcherErrors.push(error) })
    clients.push(watcher)
    const seen = new Awareness(new Y.Doc())
    watcher.join(seen.doc, room, { awareness: seen })
    await waitFor(() => syncStatusTracker(seen.doc).status().state === 'connected', 'the watcher in sync')

    // The device writes under 511 client ids of its own and shows a presence for each: with the
    // watcher's, the room shows the 512 presences it may.
    const ids = Array.from({ length: 511 }, (_, i) => 10_000 + i)
    const written = (clientID: number, i: number): Uint8Array => {
      const doc = new Y.Doc()
      doc.clientID = clientID
      replicaLog(doc, 'd9').push([groupEntry('d9-temp', i * 60_000, i % 256)])
      return Y.encodeStateAsUpdate(doc)
    }
    const device = (await rawSocket(relay)).ws
    device.send(authFrame(room, await deviceToken(FLEET, 'd9')))
    device.send(updateFrame(room, Y.mergeUpdates(ids.map(written))))
    device.send(presenceText(room, ids.map((id) => [id, 1, '{"name":"d9"}'] as const)))
    await waitFor(() => seen.getStates().size === 512, 'the watcher sees 512 presences')

    // A wall joins with a presence of its own: one too many.
    const errors: Error[] = []
    const wallRelay = connectRelay({ url: relay.url, token: dashboardToken, WebSocket: ws, jitter: jitterOn(clientTimers), onError: (error) => errors.push(error) })
    clients.push(wallRelay)
    const awareness = new Awareness(new Y.Doc())
    awareness.setLocalStateField('name', 'wall')
    wallRelay.join(awareness.doc, room, { awareness })
    const told = `relay ${relay.url}: ${room}: the relay did not show this client's presence (room-presence-limit 512): the room shows as many presences as it allows; the room syncs on, and the presence goes again at its next change`
    await waitFor(() => errors.length > 0, 'the wall told its presence was not shown')
    expect(errors.map((error) => error.message)).toEqual([told])
    expect(syncStatusTracker(awareness.doc).status()).toMatchObject({ state: 'connected', refusal: null })
    expect(replicaLog(awareness.doc, 'd9').length).toBe(511)

    // Its next change is dropped too, and not told again on this connection; the room syncs on.
    const dropped = await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')
    awareness.setLocalStateField('name', 'wall 2')
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_presence_dropped_total')) > dropped, 'the change dropped')
    // An update the device sends now reaches the wall after what the relay told it of the drop.
    device.send(updateFrame(room, written(20_000, 511)))
    await waitFor(() => replicaLog(awareness.doc, 'd9').length === 512, 'the wall has the next update')
    expect(errors.map((error) => error.message)).toEqual([told])
    expect(seen.getStates().has(awareness.clientID)).toBe(false)

    // A new connection of the room is told again.
    wallRelay.disconnect()
    wallRelay.connect()
    await waitFor(() => {
      if (syncStatusTracker(awareness.doc).status().state !== 'connected') clientTimers.advance(1_000)
      return errors.length > 1
    }, 'the wall told again on its new connection')
    expect(errors.map((error) => error.message)).toEqual([told, told])
    expect(watcherErrors).toEqual([])
    device.terminate()
    seen.destroy()
    awareness.destroy()
  })
})
