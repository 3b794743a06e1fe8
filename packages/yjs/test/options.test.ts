/**
 * Transport and binding options are checked before anything connects: unknown keys are named
 * with the closest known one, and bad values get an error naming the option.
 */
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { createEngine, tumbling } from '@tidemark/engine'
import { bindDoc, BroadcastChannelProvider, connectWebsocket, type OpenTabChannel } from '../src/index.ts'

const noChannel: OpenTabChannel = () => ({ post: () => {}, close: () => {} })

describe('bindDoc options', () => {
  it('names the bad option', () => {
    const engine = createEngine({ windows: tumbling(10) })
    const doc = new Y.Doc()
    expect(() => bindDoc(engine, doc, { onEror: () => {} } as never)).toThrow("bindDoc: unknown option 'onEror' (did you mean 'onError'?)")
    expect(() => bindDoc(engine, doc, { measureEvery: -1 })).toThrow(/measureEvery must be a number of ms >= 0/)
    expect(() => bindDoc(engine, doc, { maxReplicas: 0 })).toThrow(/maxReplicas must be an integer >= 1/)
    expect(() => bindDoc(engine, doc, { now: 5 as never })).toThrow(/now must be a function/)
    expect(() => bindDoc(engine, {} as Y.Doc)).toThrow(/doc must be a Y.Doc/)
    expect(() => bindDoc({} as never, doc)).toThrow(/engine must be an engine/)
    bindDoc(engine, doc, { measureEvery: Number.POSITIVE_INFINITY }).destroy()
  })
})

describe('connectWebsocket options', () => {
  it('names the bad option before it connects', () => {
    const doc = new Y.Doc()
    const connect = (options: Record<string, unknown>) => () => connectWebsocket(doc, { url: 'ws://127.0.0.1:1', room: 'fleet', ...options } as never)
    expect(connect({ rooms: 'x' })).toThrow("connectWebsocket: unknown option 'rooms' (did you mean 'room'?)")
    expect(connect({ url: '127.0.0.1:1234' })).toThrow(/url must be a ws:\/\/ or wss:\/\/ URL/)
    expect(connect({ url: 'ftp://host' })).toThrow(/url must be a ws:\/\/ or wss:\/\/ URL/)
    expect(connect({ room: '' })).toThrow(/room must be a non-empty string/)
    expect(connect({ resyncInterval: 0 })).toThrow(/resyncInterval must be a finite number of ms > 0/)
    expect(connect({ jitter: { baseMS: 10 } })).toThrow(/connectWebsocket: jitter: unknown option 'baseMS' \(did you mean 'baseMs'\?\)/)
    expect(connect({ jitter: { capMs: -5 } })).toThrow(/jitter: capMs must be a finite number of ms > 0/)
    expect(connect({ crossTab: 'no' })).toThrow(/crossTab must be true or false/)
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
