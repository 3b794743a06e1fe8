/**
 * The frames the relay sends one WebSocket in one turn of the event loop, written together.
 * `ws` writes each frame (its header and its payload) with a system call of its own, and a relay
 * that forwards the rooms' changes sends many frames to one socket at once: a dashboard following
 * a hundred rooms gets, from one read of the Redis socket, every change of its rooms that the read
 * carried. Writes were 9–16% of a relay's CPU under the relay benchmark's load.
 */
import type WebSocket from 'ws'

/**
 * The socket under a WebSocket, as far as gathering its writes goes (a `net.Socket`): writes
 * between `cork()` and `uncork()` are held, then written in one system call.
 */
export interface CorkableTransport {
  cork(): void
  uncork(): void
}

/**
 * Holds what `ws.send` writes to `transport` until the current turn of the event loop ends (its
 * `process.nextTick` queue), then writes it in one system call. Nothing waits longer than the
 * code that sent it runs: a frame sent alone goes out as soon as its sender's turn is over, as
 * before. What is held counts in `ws.bufferedAmount` and the transport's `writableLength`, so
 * the bounds on what a socket may have queued (`SocketGuard`) see it. Install it once per socket,
 * before anything sends on it.
 *
 * @example
 * wss.handleUpgrade(request, socket, head, (ws) => {
 *   gatherWrites(ws, socket as net.Socket)
 *   ws.send(a) // held
 *   ws.send(b) // held: a and b leave in one write once this turn ends
 * })
 */
export function gatherWrites(ws: WebSocket, transport: CorkableTransport): void {
  let corked = false
  const release = (): void => {
    corked = false
    // A socket destroyed meanwhile drops what was held: uncorking it writes nothing.
    transport.uncork()
  }
  const send = ws.send.bind(ws)
  ws.send = ((...args: Parameters<typeof ws.send>): void => {
    if (!corked) {
      corked = true
      transport.cork()
      process.nextTick(release)
    }
    send(...args)
  }) as typeof ws.send
}
