/**
 * The relay's side of the sockets a test opens: to read what the relay queued for a client
 * (`bufferedAmount`), and to make a client's link slow.
 */
import type { Duplex } from 'node:stream'
import { vi } from 'vitest'
import type WebSocket from 'ws'
import { WebSocketServer } from 'ws'

/**
 * Collects the relay's side of each socket upgraded from now on (the test's `vi.restoreAllMocks()`
 * stops it); the transports of those made while `slow.rate` is set write at that many bytes per second.
 *
 * @example
 * const made = serverSockets()
 * const relay = await startTestRelay(relays)
 * // … a client connects …
 * made.at(-1)?.bufferedAmount
 */
export function serverSockets(slow: { rate?: number | undefined } = {}): WebSocket[] {
  const made: WebSocket[] = []
  const handleUpgrade = WebSocketServer.prototype.handleUpgrade
  vi.spyOn(WebSocketServer.prototype, 'handleUpgrade').mockImplementation(function (this: WebSocketServer, request, socket, head, callback) {
    if (slow.rate !== undefined) slowWrites(socket, slow.rate)
    return handleUpgrade.call(this, request, socket, head, (ws, req) => {
      made.push(ws)
      callback(ws, req)
    })
  })
  return made
}

/**
 * Makes `socket` hand its writes to the kernel at `bytesPerSecond`, 16 KiB at a time, as a slow
 * link takes them: a write completes (and the next one starts) once the link carried it. Each
 * slice completes as a write of its own here, where a real socket completes a large write only
 * once the kernel took all of it (`socketGuardLargeWrite.test.ts` reads one that way).
 */
export function slowWrites(socket: Duplex, bytesPerSecond: number): void {
  const SLICE = 16 << 10
  const stream = socket as unknown as {
    _write: (chunk: Buffer | string, encoding: BufferEncoding | 'buffer', done: (error?: Error | null) => void) => void
    _writev: unknown
  }
  const write = stream._write.bind(socket)
  stream._writev = null
  stream._write = (chunk, encoding, done) => {
    // The upgrade's answer is written as a string.
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, encoding as BufferEncoding) : chunk
    const next = (from: number): void => {
      const slice = bytes.subarray(from, from + SLICE)
      setTimeout(() => {
        if (from + SLICE >= bytes.length) write(slice, 'buffer', done)
        else write(slice, 'buffer', (error) => (error ? done(error) : next(from + SLICE)))
      }, (slice.length / bytesPerSecond) * 1000)
    }
    next(0)
  }
}
