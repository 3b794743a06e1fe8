import { connect, createServer, type Server, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { type SyncProxy, startSyncProxy } from '../src/driver/syncProxy.ts'

let upstream: Server | undefined
let proxy: SyncProxy | undefined
afterEach(async () => {
  await proxy?.close()
  await new Promise<void>((resolve) => (upstream === undefined ? resolve() : upstream.close(() => resolve())))
  upstream = undefined
  proxy = undefined
})

/** An echo server on 127.0.0.1, a free port. */
async function echoServer(): Promise<number> {
  const server = createServer((socket) => socket.pipe(socket))
  upstream = server
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('echo server: no port')
  return address.port
}

/** Connects to `port`; resolves with the socket once `text` came back, or with the error that ended it. */
function echo(port: number, text: string): Promise<{ socket: Socket; reply: string } | { error: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text))
    let reply = ''
    socket.on('data', (chunk) => {
      reply += chunk.toString()
      if (reply === text) resolve({ socket, reply })
    })
    socket.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }))
    socket.on('close', () => resolve({ error: 'closed' }))
  })
}

describe('startSyncProxy', () => {
  it('passes traffic through, resets open connections and refuses new ones while cut, and passes again once restored', async () => {
    proxy = await startSyncProxy(await echoServer())
    expect(proxy.url).toBe(`ws://127.0.0.1:${proxy.port}`)
    const open = await echo(proxy.port, 'hello')
    expect(open).toMatchObject({ reply: 'hello' })
    if (!('socket' in open)) throw new Error('no socket')
    const dropped = new Promise<string>((resolve) => open.socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message)))

    proxy.cut(true)
    expect(await dropped).toBe('ECONNRESET')
    expect(await echo(proxy.port, 'anyone?')).toEqual({ error: 'ECONNRESET' })

    proxy.cut(false)
    const again = await echo(proxy.port, 'back')
    expect(again).toMatchObject({ reply: 'back' })
    if ('socket' in again) again.socket.destroy()
    expect(proxy.counts).toEqual({ accepted: 2, reset: 2 })
  })
})
