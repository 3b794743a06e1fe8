/**
 * A socket guard on a fake WebSocket (its `bufferedAmount` and its transport's byte counts set by
 * the test) and the relay's timers run by hand: what the guard does, without a network.
 */
import { EventEmitter } from 'node:events'
import type WebSocket from 'ws'
import { SocketGuard, type SocketTransport } from '../../src/gate/socketGuard.ts'
import { RelayMetrics } from '../../src/metrics/relayMetrics.ts'
import type { RelayLogLevel } from '../../src/relayLog.ts'
import type { RelayTimers } from '../../src/relayOptions.ts'

/** The guard's ping timeout (Hocuspocus' default), and the interval of its liveness checks. */
export const PING_TIMEOUT_MS = 30_000
export const HALF = PING_TIMEOUT_MS / 2
/** The guard's `maxQueuedBytes`. */
export const MAX_QUEUED = 64 << 20

/** The WebSocket as the guard uses it: `bufferedAmount` is whatever the test says is queued. */
export class FakeSocket extends EventEmitter {
  bufferedAmount = 0
  paused = false
  terminated = false
  pings = 0
  sent = 0
  /** What a `send` adds to `bufferedAmount` (the peer reads nothing meanwhile). */
  sendQueues = 0
  /** `ws`' ready states: open until the test says otherwise. */
  readonly OPEN = 1
  readyState = 1
  send(): void {
    this.sent++
    this.bufferedAmount += this.sendQueues
  }
  ping(): void {
    this.pings++
  }
  pause(): void {
    this.paused = true
  }
  resume(): void {
    this.paused = false
  }
  terminate(): void {
    this.terminated = true
  }
  close(): void {}
}

/**
 * The transport: `written` bytes of completed writes, as `bytesWritten − writableLength`, and
 * `untaken` bytes of the write under way that the kernel has not taken (`_handle.writeQueueSize`).
 */
export class FakeTransport extends EventEmitter implements SocketTransport {
  bytesRead = 0
  written = 0
  untaken = 0
  get bytesWritten(): number {
    return this.written
  }
  readonly writableLength = 0
  /** Whether a `drain` is due: the test sets it with what it queues. */
  writableNeedDrain = false
  get _handle(): { writeQueueSize: number } {
    return { writeQueueSize: this.untaken }
  }
}

/** Timers run by hand: `advance(ms)` runs what falls due, in order. */
export class ManualTimers implements RelayTimers {
  now = 0
  readonly #due: { at: number; run: () => void; id: number }[] = []
  #ids = 0
  setTimeout(run: () => void, ms: number): unknown {
    const timer = { at: this.now + ms, run, id: ++this.#ids }
    this.#due.push(timer)
    return timer.id
  }
  clearTimeout(id: unknown): void {
    const at = this.#due.findIndex((timer) => timer.id === id)
    if (at >= 0) this.#due.splice(at, 1)
  }
  advance(ms: number): void {
    const until = this.now + ms
    for (;;) {
      this.#due.sort((a, b) => a.at - b.at || a.id - b.id)
      const next = this.#due[0]
      if (next === undefined || next.at > until) break
      this.#due.shift()
      this.now = next.at
      next.run()
    }
    this.now = until
  }
}

/**
 * A guard installed and authenticated on a fake socket, with `maxQueuedBytes` `MAX_QUEUED` unless
 * `limits` say otherwise; `send` sends the socket a byte as the relay would.
 */
export function guarded(limits: { maxQueuedBytes?: number } = { maxQueuedBytes: MAX_QUEUED }) {
  const ws = new FakeSocket()
  const transport = new FakeTransport()
  const timers = new ManualTimers()
  const metrics = new RelayMetrics()
  const logged: [RelayLogLevel, string][] = []
  const guard = new SocketGuard(
    ws as unknown as WebSocket,
    { maxUnauthenticatedBytes: 1 << 20, authTimeoutMs: 10_000, pingTimeoutMs: PING_TIMEOUT_MS, ...limits },
    metrics,
    timers,
    (level, line) => logged.push([level, line]),
    transport,
  )
  guard.install()
  guard.authenticated()
  // Hocuspocus' own pong listener: what it would count as answers to its pings.
  let hocuspocusPongs = 0
  ws.on('pong', () => hocuspocusPongs++)
  const send = (ws as unknown as WebSocket).send.bind(ws) as (data: Uint8Array) => void
  return { ws, transport, timers, metrics, logged, guard, send: () => send(new Uint8Array(1)), hocuspocusPongs: () => hocuspocusPongs }
}
