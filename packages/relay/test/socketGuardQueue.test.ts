/**
 * What the socket guard does with what the relay queues for a socket, and with its pings, on a
 * fake WebSocket (its `bufferedAmount` and its transport's byte counts set by the test) and the
 * relay's timers run by hand. The real relay's behaviour is in `slowReader.test.ts`.
 */
import { describe, expect, it } from 'vitest'
import { DEFAULT_LIMITS, queuedBytesFor, RelayConfigError, relayOptionsFromEnv, resolveRelayOptions } from '../src/index.ts'
import { guarded, HALF, MAX_QUEUED, PING_TIMEOUT_MS } from './support/guardedSockets.ts'
import { SECRET, SECRET_TEXT } from './support/roomClients.ts'

describe('what the relay queues for a socket', () => {
  it('past half of maxQueuedBytes the socket is no longer read, and it is read again once its transport drains', () => {
    const { ws, transport, send } = guarded()
    ws.bufferedAmount = MAX_QUEUED / 2
    send()
    expect(ws.paused).toBe(false)
    ws.bufferedAmount = MAX_QUEUED / 2 + 1
    send()
    expect(ws.paused).toBe(true)
    expect(ws.terminated).toBe(false)
    ws.bufferedAmount = 0
    transport.emit('drain')
    expect(ws.paused).toBe(false)
  })

  it('past maxQueuedBytes the socket is cut at once, counted and logged as slow-reader', () => {
    const { ws, metrics, logged, send } = guarded()
    ws.sendQueues = 1 << 20
    ws.bufferedAmount = MAX_QUEUED - (1 << 20)
    send()
    expect(ws.terminated).toBe(false)
    send()
    expect(ws.terminated).toBe(true)
    expect(metrics.refusalCount('slow-reader')).toBe(1)
    expect(logged).toEqual([['info', `cut a socket (slow-reader): ${MAX_QUEUED + (1 << 20)} bytes queued for it, more than ${MAX_QUEUED}`]])
    // Cut once: what Hocuspocus still sends it changes nothing.
    send()
    expect(metrics.refusalCount('slow-reader')).toBe(1)
  })

  it('without maxQueuedBytes nothing is bounded', () => {
    const { ws, send } = guarded({})
    ws.bufferedAmount = Number.MAX_SAFE_INTEGER
    send()
    expect(ws.paused).toBe(false)
    expect(ws.terminated).toBe(false)
  })

  it('a socket held and released by liveness checks while its queue never empties keeps one drain listener', () => {
    const { ws, transport, timers, send } = guarded()
    // A slow reader whose queue hovers around half of maxQueuedBytes: it never drains to 0, so
    // the transport never emits 'drain', and each liveness check finds it below half and releases it.
    for (let i = 0; i < 40; i++) {
      ws.bufferedAmount = MAX_QUEUED / 2 + 1
      send()
      expect(ws.paused).toBe(true)
      ws.bufferedAmount = MAX_QUEUED / 2 - 1000
      transport.written += 1000
      timers.advance(HALF)
      expect(ws.paused).toBe(false)
    }
    expect(ws.terminated).toBe(false)
    expect(transport.listenerCount('drain')).toBe(1)
  })

  it('a held socket whose queue fell to half is read again at the next liveness check, drained or not', () => {
    const { ws, timers, send } = guarded()
    ws.bufferedAmount = MAX_QUEUED / 2 + 1
    send()
    expect(ws.paused).toBe(true)
    ws.bufferedAmount = MAX_QUEUED / 4
    ws.emit('pong')
    timers.advance(HALF)
    expect(ws.paused).toBe(false)
  })
})

describe('answers to joins', () => {
  /**
   * Joins whose answers wait for room: each admitted one is sent in the microtasks after (queued
   * whole, the peer reading nothing meanwhile), as Hocuspocus sends it; `drainDue` false: what it
   * queues stays under the stream's high-water mark, so no drain will come.
   */
  function joins({ ws, transport, guard }: ReturnType<typeof guarded>, drainDue = true) {
    const admitted: string[] = []
    return {
      admitted,
      ask: (label: string, bytes: number) =>
        void guard.roomForAnswer(() => bytes).then(() => {
          admitted.push(label)
          ws.bufferedAmount += bytes
          if (drainDue) transport.writableNeedDrain = true
        }),
    }
  }
  /** The answers admitted are sent (the microtasks after their admission), then the guard's timers run what is due: no real time passes. */
  const settled = async ({ timers }: ReturnType<typeof guarded>) => {
    await Promise.resolve()
    timers.advance(0)
    await Promise.resolve()
  }

  it('an answer held behind one just admitted is weighed again on the guard’s timers, once that one was sent', async () => {
    const socket = guarded()
    const { admitted, ask } = joins(socket, false)
    ask('small', 1000)
    ask('large', MAX_QUEUED / 2)
    // Sent: 1000 bytes queued, under the high-water mark, so no drain will come to admit the large one.
    await Promise.resolve()
    expect(admitted).toEqual(['small'])
    socket.timers.advance(0)
    await Promise.resolve()
    expect(admitted).toEqual(['small', 'large'])
  })

  it('are admitted while they fit under half of maxQueuedBytes, the rest in order as the queue drains', async () => {
    const socket = guarded()
    const { ws, transport } = socket
    const { admitted, ask } = joins(socket)
    const room = 12 << 20
    // Five joins of a 12 MiB room read at once; each admitted answer is queued before the next is weighed.
    for (const label of ['a', 'b', 'c', 'd', 'e']) ask(label, room)
    await settled(socket)
    await settled(socket)
    expect(admitted).toEqual(['a', 'b'])
    expect(ws.bufferedAmount).toBe(2 * room)
    // The peer read some: not enough room yet for one more.
    ws.bufferedAmount = room + 1
    await settled(socket)
    expect(admitted).toEqual(['a', 'b'])
    ws.bufferedAmount = 0
    transport.writableNeedDrain = false
    transport.emit('drain')
    await settled(socket)
    await settled(socket)
    expect(admitted).toEqual(['a', 'b', 'c', 'd'])
    expect(ws.bufferedAmount).toBe(2 * room)
    expect(ws.terminated).toBe(false)
  })

  it('an answer larger than half of maxQueuedBytes waits for an empty queue, not forever', async () => {
    const socket = guarded()
    const { ws, transport } = socket
    const { admitted, ask } = joins(socket)
    ws.bufferedAmount = 1
    transport.writableNeedDrain = true
    ask('large', MAX_QUEUED / 2 + 1)
    await settled(socket)
    expect(admitted).toEqual([])
    ws.bufferedAmount = 0
    transport.writableNeedDrain = false
    transport.emit('drain')
    await settled(socket)
    expect(admitted).toEqual(['large'])
  })

  it('a queue under the stream’s high-water mark, with no drain to come, does not hold an answer', async () => {
    const socket = guarded()
    const { admitted, ask } = joins(socket)
    socket.ws.bufferedAmount = 1000
    ask('a', MAX_QUEUED / 2)
    await settled(socket)
    expect(admitted).toEqual(['a'])
  })

  it('waiting answers are let go when the socket closes, and none wait without maxQueuedBytes', async () => {
    const socket = guarded()
    const { ws, transport } = socket
    const { admitted, ask } = joins(socket)
    ws.bufferedAmount = MAX_QUEUED / 2
    transport.writableNeedDrain = true
    ask('a', 1000)
    await settled(socket)
    expect(admitted).toEqual([])
    ws.emit('close')
    await settled(socket)
    expect(admitted).toEqual(['a'])

    const unbounded = guarded({})
    unbounded.ws.bufferedAmount = Number.MAX_SAFE_INTEGER
    const other = joins(unbounded)
    other.ask('b', 1 << 30)
    await settled(unbounded)
    expect(other.admitted).toEqual(['b'])
  })
})

describe('liveness', () => {
  it('a socket that answers its pings is never cut', () => {
    const { ws, timers } = guarded()
    for (let i = 0; i < 20; i++) {
      timers.advance(HALF)
      ws.emit('pong')
    }
    expect(ws.terminated).toBe(false)
    expect(ws.pings).toBe(20)
  })

  it('a socket that neither answers a ping nor reads is cut after the ping timeout, counted as unresponsive', () => {
    const { ws, timers, transport, metrics, logged } = guarded()
    ws.bufferedAmount = 4096
    transport.written = 1000
    // Its first ping goes at the first check; a ping timeout later, with no answer, it is cut.
    timers.advance(HALF)
    expect(ws.pings).toBe(1)
    timers.advance(HALF)
    expect(ws.terminated).toBe(false)
    timers.advance(HALF)
    expect(ws.terminated).toBe(true)
    expect(metrics.refusalCount('unresponsive')).toBe(1)
    expect(logged).toEqual([['info', `cut a socket (unresponsive): it answered no ping and read nothing for ${PING_TIMEOUT_MS} ms (4096 bytes queued for it)`]])
  })

  it('a socket reading its way through a backlog is alive though its pong waits behind it, and Hocuspocus is told so', () => {
    const { ws, timers, transport, hocuspocusPongs } = guarded()
    ws.bufferedAmount = 40 << 20
    // Five minutes at 64 KiB/s: the backlog shrinks, no pong comes.
    for (let i = 0; i < 20; i++) {
      transport.written += 64 * 1024 * (HALF / 1000)
      ws.bufferedAmount -= 64 * 1024 * (HALF / 1000)
      timers.advance(HALF)
      expect(ws.terminated).toBe(false)
    }
    // The first check has seen no backlog taken yet; each one after has.
    expect(hocuspocusPongs()).toBe(19)
  })

  it('a peer reading one large write is alive: the kernel takes more of it at each check, though the write has not completed', () => {
    const { ws, timers, transport, hocuspocusPongs } = guarded()
    // A room's whole state at a join: one 64 MiB write under way, taken at 64 KiB/s.
    ws.bufferedAmount = 64 << 20
    transport.untaken = 64 << 20
    for (let i = 0; i < 20; i++) {
      transport.untaken -= 64 * 1024 * (HALF / 1000)
      ws.bufferedAmount -= 64 * 1024 * (HALF / 1000)
      timers.advance(HALF)
      expect(ws.terminated).toBe(false)
    }
    expect(hocuspocusPongs()).toBe(19)
  })

  it('bytes written while nothing was queued prove nothing: a peer gone with the kernel taking its bytes is cut', () => {
    const { ws, timers, transport, hocuspocusPongs } = guarded()
    // Each update goes straight to the kernel's buffer (nothing queued in the relay at the checks).
    for (let i = 0; i < 3; i++) {
      expect(ws.terminated).toBe(false)
      transport.written += 10_000
      timers.advance(HALF)
    }
    expect(ws.terminated).toBe(true)
    expect(hocuspocusPongs()).toBe(0)
  })

  it('a backlog that stops shrinking no longer counts: the socket is cut one ping timeout after its last read', () => {
    const { ws, timers, transport } = guarded()
    ws.bufferedAmount = 1 << 20
    timers.advance(HALF)
    transport.written += 1000
    timers.advance(HALF)
    timers.advance(HALF)
    expect(ws.terminated).toBe(false)
    timers.advance(HALF)
    expect(ws.terminated).toBe(true)
  })
})

describe('maxQueuedBytes', () => {
  it('defaults to 4 × maxRoomBytes, whatever maxRoomBytes is given', () => {
    expect(DEFAULT_LIMITS.maxQueuedBytes).toBe(queuedBytesFor(DEFAULT_LIMITS.maxRoomBytes))
    expect(resolveRelayOptions({ auth: { secret: SECRET } }).limits.maxQueuedBytes).toBe(64 << 20)
    expect(resolveRelayOptions({ auth: { secret: SECRET }, limits: { maxRoomBytes: 1 << 20 } }).limits.maxQueuedBytes).toBe(4 << 20)
    expect(resolveRelayOptions({ auth: { secret: SECRET }, limits: { maxQueuedBytes: 40 << 20 } }).limits.maxQueuedBytes).toBe(40 << 20)
  })

  it('left out, stays a valid default however large maxRoomBytes is (it stops at 2^53 − 1)', () => {
    expect(resolveRelayOptions({ auth: { secret: SECRET }, limits: { maxRoomBytes: 2 ** 52 } }).limits.maxQueuedBytes).toBe(Number.MAX_SAFE_INTEGER)
  })

  it('is refused below 2 × maxRoomBytes (a join’s whole state must fit above its half), naming the option or the variable', () => {
    expect(() => resolveRelayOptions({ auth: { secret: SECRET }, limits: { maxQueuedBytes: (32 << 20) - 1 } })).toThrow(
      new RangeError(`startRelay: limits.maxQueuedBytes must be at least 2 × limits.maxRoomBytes (${32 << 20}), got ${(32 << 20) - 1}`),
    )
    const env = { TIDEMARK_AUTH_SECRET: SECRET_TEXT }
    expect(relayOptionsFromEnv({ ...env, TIDEMARK_MAX_QUEUED_BYTES: String(32 << 20) }).limits).toEqual({ maxQueuedBytes: 32 << 20 })
    expect(() => relayOptionsFromEnv({ ...env, TIDEMARK_MAX_ROOM_BYTES: '1000', TIDEMARK_MAX_QUEUED_BYTES: '1999' })).toThrow(
      new RelayConfigError('TIDEMARK_MAX_QUEUED_BYTES', 'must be at least 2 × TIDEMARK_MAX_ROOM_BYTES (2000), got 1999'),
    )
  })
})
