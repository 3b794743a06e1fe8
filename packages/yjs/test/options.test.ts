/**
 * Transport and binding options are checked before anything connects: unknown keys are named
 * with the closest known one, and bad values get an error naming the option.
 */
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { createEngine, tumbling } from '@tidemark/engine'
import { bindDoc, BroadcastChannelProvider, connectRelay, followRooms, type OpenTabChannel } from '../src/index.ts'

const noChannel: OpenTabChannel = () => ({ post: () => {}, close: () => {} })

describe('bindDoc options', () => {
  it('names the bad option', () => {
    const engine = createEngine({ windows: tumbling(10) })
    const doc = new Y.Doc()
    expect(() => bindDoc(engine, doc, { onEror: () => {} } as never)).toThrow("bindDoc: unknown option 'onEror' (did you mean 'onError'?)")
    expect(() => bindDoc(engine, doc, { measureEvery: -1 })).toThrow(/measureEvery must be a number of ms >= 0/)
    expect(() => bindDoc(engine, doc, { maxReplicas: 0 })).toThrow(/maxReplicas must be an integer >= 1/)
    expect(() => bindDoc(engine, doc, { now: 5 as never })).toThrow(/now must be a function/)
    expect(() => bindDoc(engine, doc, { readOnly: 'yes' as never })).toThrow(/readOnly must be true or false/)
    expect(() => bindDoc(engine, {} as Y.Doc)).toThrow(/doc must be a Y.Doc/)
    expect(() => bindDoc({} as never, doc)).toThrow(/engine must be an engine/)
    bindDoc(engine, doc, { measureEvery: Number.POSITIVE_INFINITY }).destroy()
  })
})

/** A socket that never opens: options are checked before any socket matters. */
class ClosedSocket {
  binaryType = 'arraybuffer'
  send(): void {}
  close(): void {}
  addEventListener(): void {}
}

describe('connectRelay options', () => {
  it('names the bad option before it connects', () => {
    const connect = (options: Record<string, unknown>) => () => connectRelay({ url: 'ws://127.0.0.1:1', token: 't', WebSocket: ClosedSocket, ...options } as never)
    expect(connect({ tokn: 'x' })).toThrow("connectRelay: unknown option 'tokn' (did you mean 'token'?)")
    expect(connect({ url: '127.0.0.1:1234' })).toThrow(/url must be a ws:\/\/ or wss:\/\/ URL/)
    expect(connect({ url: [] })).toThrow('connectRelay: url must be a ws:// or wss:// URL, or a non-empty list of them')
    expect(connect({ url: ['ws://127.0.0.1:1', 'http://127.0.0.1:2'] })).toThrow('connectRelay: url[1] must be a ws:// or wss:// URL, got http://127.0.0.1:2')
    expect(connect({ token: 42 })).toThrow('connectRelay: token must be a string or a function, got number')
    expect(connect({ tokenTimeoutMs: 0 })).toThrow('connectRelay: tokenTimeoutMs must be a positive number of ms, got 0')
    expect(connect({ tokenTimeoutMs: '5000' })).toThrow('connectRelay: tokenTimeoutMs must be a positive number of ms, got 5000')
    expect(connect({ maxPendingRooms: 0 })).toThrow('connectRelay: maxPendingRooms must be an integer >= 1, got 0')
    expect(connect({ maxPendingRooms: 2.5 })).toThrow('connectRelay: maxPendingRooms must be an integer >= 1, got 2.5')
    expect(connect({ WebSocket: 'ws' })).toThrow('connectRelay: WebSocket must be a class (Node 20: the ws package)')
    // Node 20 has no global WebSocket.
    expect(connect({ WebSocket: undefined })).toThrow('connectRelay: WebSocket must be a class (Node 20: the ws package)')
    expect(connect({ jitter: { capMS: 10 } })).toThrow(/connectRelay: jitter: unknown option 'capMS' \(did you mean 'capMs'\?\)/)
    // baseMs and capMs are any finite number of ms > 0, as the error says; initialMs may be 0.
    expect(connect({ jitter: { capMs: 0 } })).toThrow('connectRelay: jitter: capMs must be a finite number of ms > 0, got 0')
    expect(connect({ jitter: { baseMs: -1 } })).toThrow('connectRelay: jitter: baseMs must be a finite number of ms > 0, got -1')
    expect(connect({ jitter: { initialMs: -1 } })).toThrow('connectRelay: jitter: initialMs must be a finite number of ms >= 0, got -1')
    connectRelay({ url: 'ws://127.0.0.1:1', token: 't', WebSocket: ClosedSocket, jitter: { baseMs: 0.5, capMs: 0.5, initialMs: 0 } } as never).destroy()
    expect(connect({ onError: true })).toThrow(/onError must be a function/)
  })

  it('names a bad join, and a room joined twice', () => {
    const relay = connectRelay({ url: 'ws://127.0.0.1:1', token: 't', WebSocket: ClosedSocket })
    const doc = new Y.Doc()
    expect(() => relay.join({} as Y.Doc, 'fleet-a/d01')).toThrow(/doc must be a Y.Doc/)
    expect(() => relay.join(doc, '')).toThrow(/room must be a non-empty string/)
    expect(() => relay.join(doc, 'fleet-a/d01', { awarness: null } as never)).toThrow("relay.join: unknown option 'awarness' (did you mean 'awareness'?)")
    expect(() => relay.join(doc, 'fleet-a/d01', { awareness: {} as never })).toThrow('relay.join: fleet-a/d01: awareness must be of the doc')
    const handle = relay.join(doc, 'fleet-a/d01')
    expect(() => relay.join(new Y.Doc(), 'fleet-a/d01')).toThrow('relay.join: fleet-a/d01 is already joined; destroy its handle first')
    handle.destroy()
    relay.join(new Y.Doc(), 'fleet-a/d01')
    relay.destroy()
    expect(() => relay.join(new Y.Doc(), 'fleet-a/d02')).toThrow('relay.join: the relay was destroyed')
  })
})

describe('followRooms options', () => {
  it('names the bad option', () => {
    const engine = createEngine({ windows: tumbling(10) })
    const relay = connectRelay({ url: 'ws://127.0.0.1:1', token: 't', WebSocket: ClosedSocket })
    expect(() => followRooms(engine, relay, { directory: '' })).toThrow(/directory must be a room name/)
    expect(() => followRooms(engine, relay, { directroy: 'fleet-a/_directory' } as never)).toThrow("followRooms: unknown option 'directroy' (did you mean 'directory'?)")
    expect(() => followRooms(engine, relay, { directory: 'fleet-a/_directory', bind: { readOnly: false } as never })).toThrow(/without readOnly/)
    expect(() => followRooms(engine, {} as never, { directory: 'fleet-a/_directory' })).toThrow(/relay must come from connectRelay/)
    const directory = 'fleet-a/_directory'
    expect(() => followRooms(engine, relay, { directory, refill: true as never })).toThrow(/refill must be false or \{ boundMs\?, now\?, timers\? \}, got true/)
    expect(() => followRooms(engine, relay, { directory, refill: { boundMs: -1 } })).toThrow(/refill.boundMs must be a number of ms >= 0, got -1/)
    expect(() => followRooms(engine, relay, { directory, refill: { boundMs: Number.NaN } })).toThrow(/refill.boundMs/)
    expect(() => followRooms(engine, relay, { directory, refill: { now: 5 as never } })).toThrow(/refill.now must be a function/)
    expect(() => followRooms(engine, relay, { directory, refill: { timers: {} as never } })).toThrow(/refill.timers must have setTimeout and clearTimeout/)
    expect(() => followRooms(engine, relay, { directory, refill: { bound: 5 } as never })).toThrow(/unknown option 'bound'/)
    relay.destroy()
  })
})

describe('BroadcastChannelProvider options', () => {
  it('names the bad option', () => {
    const doc = new Y.Doc()
    expect(() => new BroadcastChannelProvider(doc, 'fleet', { trackStatuss: false } as never)).toThrow(
      "BroadcastChannelProvider: unknown option 'trackStatuss' (did you mean 'trackStatus'?)",
    )
    expect(() => new BroadcastChannelProvider(doc, 'fleet', { connect: 'no' as never })).toThrow(/connect must be true or false/)
    expect(() => new BroadcastChannelProvider(doc, 'fleet', { channel: 'x' as never })).toThrow(/channel must be a function/)
    expect(() => new BroadcastChannelProvider(doc, '', { channel: noChannel })).toThrow(/name must be a non-empty string/)
    new BroadcastChannelProvider(doc, 'fleet', { channel: noChannel, trackStatus: false }).destroy()
  })
})
