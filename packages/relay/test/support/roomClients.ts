/**
 * Simulated devices and dashboards: one Y.Doc per device, Hocuspocus providers over `ws`, and
 * tokens signed with the tests' secret.
 */
import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import { SignJWT } from 'jose'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { readRelayMetrics } from '../../scripts/relayChild.ts'

/** The HS256 secret of the tests' relays. */
export const SECRET_TEXT = 'tidemark-relay-tests-secret-0123456789abcdef'
export const SECRET = new TextEncoder().encode(SECRET_TEXT)

/** Signs a token; `expiresAt` in seconds since the epoch (default: in an hour). */
export async function signToken(claims: Record<string, unknown>, options: { readonly expiresAt?: number; readonly secret?: Uint8Array } = {}): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setExpirationTime(options.expiresAt ?? Math.floor(Date.now() / 1000) + 3600)
    .sign(options.secret ?? SECRET)
}

/** A device's token: its own room `<fleet>/<device>`, its replica and source `<device>-temp`. */
export function deviceToken(fleet: string, device: string): Promise<string> {
  return signToken({ sub: device, role: 'device', rooms: [`${fleet}/${device}`], replicas: [device], sources: [`${device}-temp`] })
}

/** A dashboard's token for every room of a fleet. */
export function dashboardToken(fleet: string): Promise<string> {
  return signToken({ sub: 'dashboard', role: 'dashboard', rooms: [`${fleet}/*`] })
}

/** A group entry of one key (the shape @tidemark/yjs writes). */
export function groupEntry(source: string, start: number, fill = 0): unknown[] {
  return ['g', 'tumbling:60000', start, source, '["k"]', new Uint8Array(48).fill(fill), new Uint8Array(0)]
}

/** A clock entry. */
export function clockEntry(source: string, writer: string, version: number): unknown[] {
  return ['k', source, writer, version * 1000, version, version * 1000, 1, version]
}

/** A replica's log array in a doc. */
export function replicaLog(doc: Y.Doc, replica: string): Y.Array<unknown[]> {
  return doc.getArray<unknown[]>(`tidemark:replica:${replica}`)
}

/** A device's document and each update it made: one reading (a group entry) per start. */
export function deviceUpdates(device: string, starts: readonly number[]): { doc: Y.Doc; updates: Uint8Array[] } {
  const doc = new Y.Doc()
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  for (const [i, start] of starts.entries()) replicaLog(doc, device).push([groupEntry(`${device}-temp`, start, i % 256)])
  return { doc, updates }
}

/** A WebSocket to the relay, shared by the rooms opened on it. */
export function relaySocket(url: string): HocuspocusProviderWebsocket {
  return new RelaySocket({ url, WebSocketPolyfill: WebSocket, delay: 100, minDelay: 100, factor: 1.5, maxDelay: 1000, jitter: false })
}

/**
 * A raw WebSocket to `relay` once it is open, and how it was closed: for frames no provider sends.
 *
 * @example
 * const { ws, closed } = await rawSocket(relay)
 * ws.send(new Uint8Array([0x7f]))
 * expect((await closed).code).toBe(4400)
 */
export async function rawSocket(relay: { readonly url: string }): Promise<{ ws: WebSocket; closed: Promise<{ code: number; reason: string }> }> {
  const ws = new WebSocket(relay.url)
  ws.on('error', () => undefined)
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })))
  await new Promise((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  return { ws, closed }
}

/** What `ws` reports when a socket is closed while it is still connecting. */
const ABORTED_HANDSHAKE = 'WebSocket was closed before the connection was established'

/**
 * A provider socket that can be destroyed while it connects (a relay just killed or restarting).
 * `ws` reports that abort as an 'error' event one tick later, after Hocuspocus has removed its
 * listeners, which would be an uncaught exception in the test run: that one expected error is
 * taken here, and any other error of the socket is thrown.
 */
class RelaySocket extends HocuspocusProviderWebsocket {
  override destroy(): void {
    const socket = this.webSocket as WebSocket | null
    if (socket !== null && socket.readyState === WebSocket.CONNECTING) {
      socket.once('error', (error: Error) => {
        if (error.message !== ABORTED_HANDSHAKE) throw error
      })
    }
    super.destroy()
  }
}

/** A room opened on a socket, with what the relay told it. */
export interface RoomClient {
  readonly provider: HocuspocusProvider
  readonly doc: Y.Doc
  /** Reasons of permission-denied answers. */
  readonly denied: string[]
  /** Reasons of CLOSE messages for this room. */
  readonly closed: string[]
  /** Stateless payloads received. */
  readonly stateless: string[]
  /** Times the provider synced. */
  synced(): boolean
  destroy(): void
}

/** Opens `room` on `socket` with `token`, for `doc` (default: a new Y.Doc). */
export function openRoom(socket: HocuspocusProviderWebsocket, room: string, token: string, doc = new Y.Doc()): RoomClient {
  const denied: string[] = []
  const closed: string[] = []
  const stateless: string[] = []
  const provider = new HocuspocusProvider({
    websocketProvider: socket,
    name: room,
    document: doc,
    token,
    onAuthenticationFailed: ({ reason }) => denied.push(reason),
    onClose: ({ event }) => closed.push(event.reason),
    onStateless: ({ payload }) => stateless.push(payload),
  })
  provider.attach()
  return {
    provider,
    doc,
    denied,
    closed,
    stateless,
    synced: () => provider.synced,
    destroy: () => provider.destroy(),
  }
}

/** Polls `condition` every 10 ms until it holds; fails naming `what` after `ms`. */
export async function waitFor(condition: () => boolean, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms
  while (!condition()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** The relay's metrics as name{labels} → value. */
export function scrapeMetrics(httpUrl: string): Promise<Map<string, number>> {
  return readRelayMetrics(httpUrl)
}

/** One metric value (0 when absent). */
export async function metric(httpUrl: string, name: string): Promise<number> {
  return (await scrapeMetrics(httpUrl)).get(name) ?? 0
}

/** Polls an async `condition` every 20 ms until it holds; fails naming `what` after `ms`. */
export async function waitUntil(condition: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
