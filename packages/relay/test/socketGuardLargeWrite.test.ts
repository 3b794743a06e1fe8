/**
 * A peer on a slow link reading one large message (a room's whole state at a join, sent as one
 * write) is alive while it reads, though it never answers a ping: Node completes the write only
 * once the kernel took all of it, so what shows it moving is the part of the write the kernel
 * took (`_handle.writeQueueSize`). Real sockets on loopback, a raw reader taking at most 4 MB/s (about 1 MB/s on loopback), real
 * timers, the real guard.
 */
import http from 'node:http'
import net from 'node:net'
import { afterEach, expect, it } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import { SocketGuard } from '../src/gate/socketGuard.ts'
import { RelayMetrics } from '../src/metrics/relayMetrics.ts'
import { GLOBAL_TIMERS } from '../src/relayOptions.ts'
import { waitFor } from './support/roomClients.ts'

const cleanups: (() => void)[] = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

it('a peer reading one large message slowly is not cut as unresponsive while it reads', async () => {
  const PING_TIMEOUT_MS = 6_000
  const MESSAGE = 12 << 20
  const logged: string[] = []
  let serverSide: WebSocket | undefined
  const server = http.createServer()
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false })
  server.on('upgrade', (request, socket, head) => {
    wss.handleUpgrade(request, socket, head, (ws) => {
      const guard = new SocketGuard(
        ws,
        { maxUnauthenticatedBytes: 1 << 20, authTimeoutMs: 600_000, pingTimeoutMs: PING_TIMEOUT_MS, maxQueuedBytes: 1 << 30 },
        new RelayMetrics(),
        GLOBAL_TIMERS,
        (_level, line) => logged.push(line),
        socket as net.Socket,
        GLOBAL_TIMERS,
      )
      guard.install()
      guard.authenticated()
      serverSide = ws
      // A room's state at a join: one message.
      ws.send(Buffer.alloc(MESSAGE, 1))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanups.push(() => {
    serverSide?.terminate()
    server.close()
  })

  // The reader: a raw TCP client that upgrades, then takes 200 KB every 50 ms.
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1')
  cleanups.push(() => client.destroy())
  client.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n')
  client.pause()
  let received = 0
  let ended = false
  client.on('end', () => (ended = true))
  client.on('close', () => (ended = true))
  const started = Date.now()
  const reading = setInterval(() => {
    let budget = 200_000
    while (budget > 0) {
      let chunk = client.read() as Buffer | null
      if (chunk === null) break
      if (chunk.length > budget) {
        client.unshift(chunk.subarray(budget))
        chunk = chunk.subarray(0, budget)
      }
      received += chunk.length
      budget -= chunk.length
    }
  }, 50)
  cleanups.push(() => {
    clearInterval(reading)
  })

  // Until the reader has the whole message (it takes about 1 MB/s here) or the socket is cut.
  await waitFor(() => received >= MESSAGE || ended || serverSide?.readyState === WebSocket.CLOSED, 'the reader to take the whole message or the socket to close', 30_000)
  console.log(`reader took ${received} of ${MESSAGE} bytes in ${Date.now() - started} ms`)
  expect(logged.filter((line) => line.includes('unresponsive'))).toEqual([])
  expect(received).toBeGreaterThanOrEqual(MESSAGE)
}, 60_000)
