/**
 * `@tidemark/yjs`'s relay client against a real relay started in-process: what it sends when
 * nothing is left to sync, and how fast it talks in a room. The relay's deadlines and rate run on
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
import { SECRET, signToken, waitFor } from './support/roomClients.ts'

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
