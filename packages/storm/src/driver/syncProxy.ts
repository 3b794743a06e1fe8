/**
 * A device's own path to the sync server: a TCP proxy on 127.0.0.1 that the driver can cut.
 * Cut, it resets every open connection (the device's socket dies as on a network drop) and
 * resets every new one until it is restored.
 */
import { createServer, type Server, type Socket, connect } from 'node:net'

/**
 * A running proxy (`startSyncProxy`).
 *
 * @example
 * const proxy: SyncProxy = await startSyncProxy(4001)
 * proxy.cut(true)
 */
export interface SyncProxy {
  /** `ws://127.0.0.1:<port>`: give this to the device instead of the server's URL. */
  readonly url: string
  readonly port: number
  /** Connections accepted and connections reset, since it started. */
  readonly counts: { readonly accepted: number; readonly reset: number }
  /** Cuts (true) or restores (false) the path. */
  cut(cut: boolean): void
  /** Stops listening and resets every connection it carries. */
  close(): Promise<void>
}

/**
 * Starts a proxy (on 127.0.0.1, a free port) to the sync server at `upstreamPort` on
 * `upstreamHost` (default 127.0.0.1).
 *
 * @example
 * const proxy = await startSyncProxy(server.port)
 * proxy.cut(true)   // the device's sync socket drops, reconnects are refused
 * proxy.cut(false)  // the path is back
 * await proxy.close()
 */
export async function startSyncProxy(upstreamPort: number, upstreamHost = '127.0.0.1'): Promise<SyncProxy> {
  let isCut = false
  const counts = { accepted: 0, reset: 0 }
  const open = new Set<Socket>()
  const reset = (socket: Socket): void => {
    counts.reset++
    socket.resetAndDestroy()
  }
  const server: Server = createServer((client) => {
    if (isCut) {
      reset(client)
      return
    }
    counts.accepted++
    const upstream = connect(upstreamPort, upstreamHost)
    open.add(client)
    const drop = (): void => {
      open.delete(client)
      client.destroy()
      upstream.destroy()
    }
    // Either side failing (the server restarting, a reset) ends the pair; errors are the expected way a path dies here.
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('sync proxy: no port')
  return {
    url: `ws://127.0.0.1:${address.port}`,
    port: address.port,
    counts,
    cut(cut) {
      isCut = cut
      if (cut) for (const client of [...open]) reset(client)
    },
    close() {
      for (const client of open) client.destroy()
      return new Promise<void>((resolve, reject) => server.close((error) => (error === undefined ? resolve() : reject(error))))
    },
  }
}
