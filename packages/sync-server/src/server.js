#!/usr/bin/env node
/**
 * A y-websocket sync server for Tidemark replicas (@y/websocket-server 0.1.1, Yjs 13).
 *
 *   HOST=127.0.0.1 PORT=1234 node packages/sync-server/src/server.js
 *
 * PORT=0 binds a free port. Once listening it prints one line to stdout,
 *
 *   tidemark-sync-server ready {"host":"127.0.0.1","port":41234,"pid":12345}
 *
 * which tests parse for the port. Documents live in memory (no YPERSISTENCE), one per room
 * (the URL path). SIGTERM or SIGINT closes every connection and exits 0.
 */
import http from 'node:http'
import { setupWSConnection } from '@y/websocket-server/utils'
import { WebSocketServer } from 'ws'

const host = process.env.HOST || '127.0.0.1'
const port = Number.parseInt(process.env.PORT || '1234', 10)

const server = http.createServer((_request, response) => {
  response.writeHead(200, { 'Content-Type': 'text/plain' })
  response.end('tidemark-sync-server\n')
})
const sockets = new WebSocketServer({ noServer: true })
sockets.on('connection', setupWSConnection)
server.on('upgrade', (request, socket, head) => {
  sockets.handleUpgrade(request, socket, head, (ws) => sockets.emit('connection', ws, request))
})

server.listen(port, host, () => {
  const address = server.address()
  const bound = typeof address === 'object' && address !== null ? address.port : port
  process.stdout.write(`tidemark-sync-server ready ${JSON.stringify({ host, port: bound, pid: process.pid })}\n`)
})

let stopping = false
function stop() {
  if (stopping) return
  stopping = true
  for (const ws of sockets.clients) ws.terminate()
  sockets.close()
  server.close(() => process.exit(0))
  // Idle keep-alive HTTP connections would hold close() open.
  server.closeAllConnections?.()
  setTimeout(() => process.exit(0), 2000).unref()
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
