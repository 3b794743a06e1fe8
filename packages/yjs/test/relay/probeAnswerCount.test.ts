/**
 * README, "Acknowledgements": `pendingLocalUpdates` counts the local transactions no
 * acknowledgement has covered yet, and is never wrong once all are acknowledged. A relay step 1
 * that reaches a room in sync (the relay's answer to the silence probe) is answered with a step 2
 * carrying every local transaction, those still waiting for the room's pace included: they are
 * not sent (and counted off) again. Fake socket, fake timers and pace clock.
 */
import { createEngine, manual, tumbling } from '@tidemark/engine'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { bindDoc } from '../../src/binding/bindDoc.ts'
import { connectRelay } from '../../src/relay/connectRelay.ts'
import type { RelaySocket } from '../../src/relay/connectRelayOptions.ts'
import { AUTH_AUTHENTICATED, MESSAGE_AUTH, MESSAGE_SYNC, MESSAGE_SYNC_STATUS, relayMessage, SYNC_STEP_1, SYNC_STEP_2, syncMessage, writeString } from '../../src/relay/relayProtocol.ts'
import { FakeTimers, statusOf } from './harness.ts'

class FakeSocket implements RelaySocket {
  static made: FakeSocket[] = []
  binaryType = ''
  readonly #listeners = new Map<string, ((event: unknown) => void)[]>()
  /** Sync messages sent: their step. */
  readonly steps: number[] = []
  constructor(readonly url: string) {
    FakeSocket.made.push(this)
  }
  send(data: Uint8Array): void {
    const decoder = decoding.createDecoder(data)
    decoding.readVarString(decoder)
    if (decoding.readVarUint(decoder) === MESSAGE_SYNC) this.steps.push(decoding.readVarUint(decoder))
  }
  close(): void {}
  addEventListener(type: string, listener: (event: unknown) => void): void {
    this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), listener])
  }
  emit(type: string, event: unknown): void {
    for (const listener of this.#listeners.get(type) ?? []) listener(event)
  }
  message(bytes: Uint8Array): void {
    this.emit('message', { data: bytes.slice().buffer })
  }
  sync(room: string): void {
    this.message(relayMessage(room, MESSAGE_AUTH, (encoder) => {
      encoding.writeVarUint(encoder, AUTH_AUTHENTICATED)
      writeString(encoder, 'read-write')
    }))
    this.message(syncMessage(room, SYNC_STEP_1, Y.encodeStateVector(new Y.Doc())))
    this.message(syncMessage(room, SYNC_STEP_2, Y.encodeStateAsUpdate(new Y.Doc())))
  }
  /** The relay's step 1, as it answers a probe of a room in sync: its state vector. */
  askState(room: string, state: Uint8Array): void {
    this.message(syncMessage(room, SYNC_STEP_1, state))
  }
  ack(room: string): void {
    this.message(relayMessage(room, MESSAGE_SYNC_STATUS, (encoder) => encoding.writeVarUint(encoder, 1)))
  }
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))
const ROOM = 'fleet-a/d01'

describe('the answer to a silence probe while an update waits for the pace', () => {
  it('keeps pendingLocalUpdates a count of unacknowledged local transactions, in the doc and in the engine', async () => {
    FakeSocket.made = []
    const timers = new FakeTimers()
    const clock = { now: 0 }
    const errors: Error[] = []
    // A relay whose rate is one message per 4 s; a socket taken for dead after 4 s of silence (asked after 2).
    const relay = connectRelay({
      url: 'ws://127.0.0.1:1',
      token: 't',
      WebSocket: FakeSocket,
      onError: (error) => errors.push(error),
      silenceMs: 4_000,
      updatesPerSecond: 0.25,
      jitter: { random: () => 0.5, setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout, now: () => clock.now },
    })
    const engine = createEngine({ windows: tumbling(60_000), watermark: manual(), replicaId: 'd01' })
    const doc = new Y.Doc()
    bindDoc(engine, doc, { onError: (error) => errors.push(error) })
    relay.join(doc, ROOM)
    const socket = FakeSocket.made[0] as FakeSocket
    socket.emit('open', {})
    await settle()
    socket.sync(ROOM)
    socket.ack(ROOM)
    expect(statusOf(doc)).toMatchObject({ state: 'connected', pendingLocalUpdates: 0 })

    const T = 1_700_000_040_000
    const reading = (seq: number) => ({ id: `d01-${seq}`, source: 'd01', seq, ts: T + seq * 1000, key: 'temp', value: seq })
    // The first reading goes at once and is acknowledged; the second waits 4 s for the pace.
    engine.ingest([reading(1)])
    await settle()
    socket.ack(ROOM)
    // What the relay holds from now on (until the probe's exchange).
    const relayHas = Y.encodeStateVector(doc)
    engine.ingest([reading(2)])
    await settle()
    expect(socket.steps).toEqual([0, 1, 2])
    expect(statusOf(doc).pendingLocalUpdates).toBe(1)

    // Two silence checks: the first saw the acknowledgement, the second probes with a step 1.
    timers.runUpTo(2_000)
    timers.runUpTo(2_000)
    expect(socket.steps).toEqual([0, 1, 2, 0])
    // The relay answers the probe (its step 1 and step 2): the room answers with a step 2 holding the second reading.
    socket.askState(ROOM, relayHas)
    socket.message(syncMessage(ROOM, SYNC_STEP_2, Y.encodeStateAsUpdate(new Y.Doc())))
    expect(socket.steps).toEqual([0, 1, 2, 0, 1])
    socket.ack(ROOM)
    // The pace's token comes: the step 2 carried the second reading, which does not go again.
    clock.now += 4_000
    timers.runUpTo(4_000)
    expect(socket.steps).toEqual([0, 1, 2, 0, 1])

    // Every local transaction was acknowledged: none pending, and nothing to report.
    expect.soft(statusOf(doc).pendingLocalUpdates).toBe(0)
    expect.soft(errors.map((error) => error.message)).toEqual([])
    expect.soft(engine.syncStatus().pendingLocalUpdates).toBe(0)
    // A third reading, not acknowledged: pending.
    engine.ingest([reading(3)])
    await settle()
    expect.soft(statusOf(doc).pendingLocalUpdates).toBe(1)
    expect.soft(engine.syncStatus().pendingLocalUpdates).toBe(1)
    relay.destroy()
  })
})
