/**
 * The frames sent to one WebSocket in one turn of the event loop leave in one write: real
 * sockets on loopback, a real `ws` server and client, the writes counted on the server's socket.
 */
import http from 'node:http'
import type net from 'node:net'
import { afterEach, expect, it } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import { gatherWrites } from '../src/gate/socketWrites.ts'
import { waitFor } from './support/roomClients.ts'

interface Served {
  readonly ws: WebSocket
  readonly socket: net.Socket
  /** Write system calls the server's socket made (`_write` and `_writev` calls) since it was served. */
  writes(): number
  readonly received: string[]
}

const cleanups: (() => void)[] = []
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup()
})

async function serve(gather: boolean): Promise<Served> {
  const server = http.createServer()
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false })
  const served = new Promise<Omit<Served, 'received'>>((resolve) => {
    server.on('upgrade', (request, socket, head) => {
      wss.handleUpgrade(request, socket, head, (ws) => {
        const transport = socket as net.Socket & { _write: (...args: unknown[]) => void; _writev: (...args: unknown[]) => void }
        let writes = 0
        for (const name of ['_write', '_writev'] as const) {
          const original = transport[name].bind(transport)
          transport[name] = (...args: unknown[]) => {
            writes++
            original(...args)
          }
        }
        if (gather) gatherWrites(ws, transport)
        resolve({ ws, socket: transport, writes: () => writes })
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const client = new WebSocket(`ws://127.0.0.1:${(server.address() as net.AddressInfo).port}`)
  const received: string[] = []
  client.on('message', (data) => received.push(String(data)))
  cleanups.push(() => {
    client.terminate()
    wss.close()
    server.close()
  })
  const side = await served
  await new Promise<void>((resolve) => client.once('open', () => resolve()))
  return { ...side, received }
}

it('frames sent in one turn leave in one write, in the order they were sent', async () => {
  const { ws, writes, received } = await serve(true)
  const before = writes()
  for (let i = 0; i < 20; i++) ws.send(`change ${i}`)
  // Held until the turn ends: none is written yet, and every one counts as queued for the socket.
  expect(writes() - before).toBe(0)
  expect(ws.bufferedAmount).toBe(20 * 2 + [...Array(20).keys()].reduce((n, i) => n + `change ${i}`.length, 0))
  await waitFor(() => received.length === 20, 'the 20 frames')
  expect(writes() - before).toBe(1)
  expect(received).toEqual([...Array(20).keys()].map((i) => `change ${i}`))
})

it('without gathering, the same frames take a write each (what gathering saves)', async () => {
  const { ws, writes, received } = await serve(false)
  const before = writes()
  for (let i = 0; i < 20; i++) ws.send(`change ${i}`)
  await waitFor(() => received.length === 20, 'the 20 frames')
  expect(writes() - before).toBe(20)
})

it('a frame sent in a later turn is not held behind the first turn: each turn is its own write', async () => {
  const { ws, writes, received } = await serve(true)
  const before = writes()
  ws.send('first')
  await new Promise((resolve) => setImmediate(resolve))
  // Written when its turn ended, before the next one began.
  expect(writes() - before).toBe(1)
  ws.send('second')
  ws.send('third')
  await waitFor(() => received.length === 3, 'the 3 frames')
  expect(writes() - before).toBe(2)
  expect(received).toEqual(['first', 'second', 'third'])
})

it('a socket cut while frames are held drops them without an error, and the process keeps serving', async () => {
  const { ws, socket, received } = await serve(true)
  const errors: unknown[] = []
  ws.on('error', (error) => errors.push(error))
  socket.on('error', (error) => errors.push(error))
  ws.send('held')
  ws.terminate()
  await new Promise<void>((resolve) => socket.once('close', () => resolve()))
  expect(socket.destroyed).toBe(true)
  expect(received).toEqual([])
  expect(errors).toEqual([])
  // Another socket served afterwards still gets its frames.
  const next = await serve(true)
  next.ws.send('after')
  await waitFor(() => next.received.length === 1, 'the frame of the next socket')
  expect(next.received).toEqual(['after'])
})
