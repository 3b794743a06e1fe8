import WebSocket from 'ws'

/** The room a relay message is for: its first field, a varString (varUint byte length, UTF-8). */
function roomOf(data: unknown): string | null {
  const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : Buffer.isBuffer(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : null
  if (bytes === null) return null
  let length = 0
  let shift = 0
  let at = 0
  for (; at < bytes.length; at++) {
    const byte = bytes[at] as number
    length += (byte & 0x7f) * 2 ** shift
    shift += 7
    if (byte < 0x80) break
  }
  return new TextDecoder().decode(bytes.subarray(at + 1, at + 1 + length))
}

/**
 * A `ws` WebSocket class whose sockets hold back what the relay sends for some rooms (in order,
 * per room) until `release()`: a relay that answers those rooms late, while the socket's other
 * rooms go on.
 *
 * @example
 * const held = heldRooms()
 * connectRelay({ url, token, WebSocket: held.WebSocket })
 * held.hold((room) => room.endsWith('/d02')) // d02's room opens only on release()
 * held.release()
 */
export function heldRooms() {
  let holding: ((room: string) => boolean) | null = null
  const queue: { readonly socket: HeldWebSocket; readonly args: unknown[] }[] = []
  class HeldWebSocket extends WebSocket {
    override emit(event: string | symbol, ...args: unknown[]): boolean {
      if (event === 'message' && holding !== null) {
        const room = roomOf(args[0])
        if (room !== null && holding(room)) {
          queue.push({ socket: this, args })
          return true
        }
      }
      return super.emit(event, ...args)
    }
    deliver(args: unknown[]): void {
      if (this.readyState === WebSocket.OPEN) super.emit('message', ...args)
    }
  }
  return {
    WebSocket: HeldWebSocket as new (url: string) => WebSocket,
    /** Holds what the relay sends for the rooms `rooms` picks, from now on. */
    hold(rooms: (room: string) => boolean): void {
      holding = rooms
    },
    /** How many messages are held. */
    held(): number {
      return queue.length
    },
    /** Delivers every held message, in order, and holds nothing more. */
    release(): void {
      holding = null
      for (const { socket, args } of queue.splice(0)) socket.deliver(args)
    },
  }
}
