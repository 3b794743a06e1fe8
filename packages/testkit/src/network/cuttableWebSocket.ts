/**
 * A network a test can cut: a `ws` WebSocket class whose sockets `cut()` terminates without a
 * close frame, as a machine losing its network or dying does. While cut, a new connection goes
 * to port 1 on loopback, which refuses it, so a client's reconnect loop runs and fails until
 * `restore()`.
 */
import WebSocket from 'ws'

/** What `cuttableWebSocket` returns: the class to hand a client, and the switch. */
export interface CuttableNetwork {
  readonly WebSocket: new (url: string) => WebSocket
  /** Terminates every open socket and refuses new ones. */
  cut(): void
  /** Lets new sockets connect again. */
  restore(): void
}

/**
 * A WebSocket class with an off switch for its network.
 *
 * @example
 * const link = cuttableWebSocket()
 * const relay = connectRelay({ url, token, WebSocket: link.WebSocket })
 * link.cut() // offline: the client's reconnects fail
 * link.restore() // back: the next reconnect connects
 */
export function cuttableWebSocket(): CuttableNetwork {
  const open = new Set<WebSocket>()
  let down = false
  class CuttableWebSocket extends WebSocket {
    constructor(url: string) {
      super(down ? 'ws://127.0.0.1:1' : url)
      open.add(this)
      this.on('close', () => open.delete(this))
    }
  }
  return {
    WebSocket: CuttableWebSocket,
    cut(): void {
      down = true
      for (const socket of open) socket.terminate()
    },
    restore(): void {
      down = false
    },
  }
}
