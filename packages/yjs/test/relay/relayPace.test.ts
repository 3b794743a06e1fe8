/**
 * One pace per room: the relay counts every message of a room connection against one rate
 * (`updatesPerSecond` of the relay), so a room's updates and its presence draw from one bucket,
 * taking turns, and a message in parts takes a token for each part. Counted at the client's
 * socket on a fake clock; the test relay shows what arrived.
 */
import type { StreamEvent } from '@tidemark/engine'
import { seededRandom } from '@tidemark/seeded-random'
import * as decoding from 'lib0/decoding'
import { describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { Awareness } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { bindDoc } from '../../src/binding/bindDoc.ts'
import { FakeTimers, fleetEngine, readings, relayClient, T0, until, untilStatus } from './harness.ts'
import { signToken, testRelayPerTest } from './testRelay.ts'

const testRelay = testRelayPerTest(/^$/)

/** A message the client put on its socket: what the relay counts against the room's rate, unless it is an Auth or a Close. */
interface Sent {
  readonly room: string
  readonly kind: 'auth' | 'step 1' | 'step 2' | 'update' | 'presence' | 'part' | 'close' | 'other'
}

/** `ws`, recording every message the client sends. */
function recordingSocket(sent: Sent[]): new (url: string) => WebSocket {
  const kinds: Record<number, Sent['kind']> = { 1: 'presence', 2: 'auth', 7: 'close', 100: 'part' }
  const steps: Sent['kind'][] = ['step 1', 'step 2', 'update']
  return class RecordingSocket extends WebSocket {
    override send(data: Uint8Array): void {
      const decoder = decoding.createDecoder(data)
      const room = decoding.readVarString(decoder)
      const type = decoding.readVarUint(decoder)
      sent.push({ room, kind: type === 0 ? (steps[decoding.readVarUint(decoder)] ?? 'other') : (kinds[type] ?? 'other') })
      super.send(data)
    }
  }
}

/** The messages of `room` the pace counts: all but its Auth, Close and sync steps (which go at once, first on a connection). */
const paced = (sent: readonly Sent[], room: string): Sent['kind'][] => sent.filter((m) => m.room === room && ['update', 'presence', 'part'].includes(m.kind)).map((m) => m.kind)

const yieldTask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** One reading of each of `keys` keys: one group entry as wide as that. */
const wide = (source: string, keys: number): StreamEvent[] => Array.from({ length: keys }, (_, i) => ({ id: `${source}-w${i}`, source, seq: i + 1, ts: T0 + 1_000, key: `k${i}`, value: i }))

/** A device client at 10 messages a second (a burst of 20), on a fake clock that stands still until the test moves it. */
async function pacedDevice(options: { readonly maxMessageBytes?: number; readonly updatesPerSecond?: number } = {}) {
  const token = await signToken({ sub: 'fleet', role: 'device', rooms: ['fleet-a/*'] })
  const timers = new FakeTimers()
  const clock = { now: 0 }
  const sent: Sent[] = []
  const jitter = { random: seededRandom(7), setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout, now: () => clock.now }
  const { relay, errors } = relayClient(testRelay().url, token, { updatesPerSecond: 10, jitter, WebSocket: recordingSocket(sent), ...options })
  const engine = fleetEngine('d01')
  const doc = new Y.Doc()
  bindDoc(engine, doc)
  return { relay, errors, timers, clock, sent, engine, doc }
}

describe('relay client: one pace per room', () => {
  it("sends a room's updates and presence within one burst and one rate, taking turns, each turn carrying what its side holds then", async () => {
    const { relay, errors, timers, clock, sent, engine, doc } = await pacedDevice()
    const awareness = new Awareness(doc)
    relay.join(doc, 'fleet-a/d01', { awareness })
    // A dashboard in the room, watching the device's presence.
    const watcher = relayClient(testRelay().url, await signToken({ sub: 'ops', role: 'dashboard', rooms: ['fleet-a/*'] }))
    const seen = new Awareness(new Y.Doc())
    watcher.relay.join(seen.doc, 'fleet-a/d01', { awareness: seen })
    const shown = (): unknown => (seen.getStates().get(doc.clientID) as { reading?: number } | undefined)?.reading
    await untilStatus(doc, 'in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    // The presence it announced when the relay authenticated it: one token of the 20.
    expect(paced(sent, 'fleet-a/d01')).toEqual(['presence'])

    // 40 tasks, each with a reading and a presence change.
    for (let i = 1; i <= 40; i++) {
      engine.ingest(readings('d01', 1, i))
      awareness.setLocalStateField('reading', i)
      await yieldTask()
    }
    // The burst is spent by both together, in turns: 20 messages, not 20 of each.
    const burst = paced(sent, 'fleet-a/d01')
    expect({ messages: burst.length, updates: burst.filter((kind) => kind === 'update').length }).toEqual({ messages: 20, updates: 10 })
    expect(timers.delays()).toEqual([100])

    // One token later the presence goes (its turn came first), as it is now; one more, the 30 readings waiting, as one update.
    clock.now += 100
    timers.runAll()
    expect(paced(sent, 'fleet-a/d01').slice(20)).toEqual(['presence'])
    clock.now += 100
    timers.runAll()
    expect(paced(sent, 'fleet-a/d01').slice(20)).toEqual(['presence', 'update'])
    await untilStatus(doc, 'every reading acknowledged', (s) => s.pendingLocalUpdates === 0)
    await until('the last reading shown', () => shown() === 40, (notify) => {
      seen.on('change', notify)
      return () => seen.off('change', notify)
    })
    expect(timers.delays()).toEqual([])
    expect([...errors, ...watcher.errors]).toEqual([])
    awareness.destroy()
    seen.destroy()
    watcher.relay.destroy()
    relay.destroy()
  })

  it('sends an update in parts once the pace has a token for each part', async () => {
    const { relay, errors, timers, clock, sent, engine, doc } = await pacedDevice({ maxMessageBytes: 4_096 })
    relay.join(doc, 'fleet-a/d01')
    await untilStatus(doc, 'in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    // 18 updates in 18 tasks: 2 tokens of the burst left.
    for (let i = 1; i <= 18; i++) {
      engine.ingest(readings('d01', 1, i))
      await yieldTask()
    }
    expect(paced(sent, 'fleet-a/d01')).toHaveLength(18)
    // One group entry of 400 keys: an update of about 20 kB, several parts of 4,096 bytes.
    engine.ingest(wide('d01-wide', 400))
    await yieldTask()
    expect(paced(sent, 'fleet-a/d01')).toHaveLength(18)
    const [wait] = timers.delays()
    clock.now += wait as number
    timers.runAll()
    const parts = paced(sent, 'fleet-a/d01').slice(18)
    expect(parts.every((kind) => kind === 'part')).toBe(true)
    // It waited for exactly the tokens its parts take beyond the 2 left.
    expect(wait).toBe((parts.length - 2) * 100)
    expect(parts.length).toBeGreaterThanOrEqual(4)
    await untilStatus(doc, 'acknowledged', (s) => s.pendingLocalUpdates === 0)
    // The next message waits for its own token: the bucket is empty.
    engine.ingest(readings('d01', 1, 1_000))
    await yieldTask()
    expect(timers.delays()).toEqual([100])
    expect(errors).toEqual([])
    relay.destroy()
  })

  it('sends at a pace of less than one message per burst (updatesPerSecond below 0.5): a message each time the bucket is full', async () => {
    const { relay, errors, timers, clock, sent, engine, doc } = await pacedDevice({ updatesPerSecond: 0.25 })
    relay.join(doc, 'fleet-a/d01')
    await untilStatus(doc, 'in sync', (s) => s.state === 'connected' && s.pendingLocalUpdates === 0)
    engine.ingest(readings('d01', 1, 1))
    await yieldTask()
    expect(paced(sent, 'fleet-a/d01')).toEqual(['update'])
    engine.ingest(readings('d01', 1, 2))
    await yieldTask()
    // One message every 4 s.
    expect(timers.delays()).toEqual([4_000])
    clock.now += 4_000
    timers.runAll()
    expect(paced(sent, 'fleet-a/d01')).toEqual(['update', 'update'])
    await untilStatus(doc, 'acknowledged', (s) => s.pendingLocalUpdates === 0)
    expect(errors).toEqual([])
    relay.destroy()
  })
})
