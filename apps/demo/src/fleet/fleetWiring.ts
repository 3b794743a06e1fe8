import type { OpenTabChannel, RelaySocket } from '@tidemark/yjs'
import { epochOf, type FleetSettings } from './fleetSettings.ts'

/** The local relay, as `/config.json` names it (written by `scripts/demo.mjs`). */
export interface RelayConfig {
  /** The relay's WebSocket URL, e.g. `ws://127.0.0.1:41234`. */
  readonly url: string
  /** Its development-token endpoint, e.g. `http://127.0.0.1:41234/dev/token`. */
  readonly tokenUrl: string
}

/**
 * How every document of the fleet reaches its peers: plain data, so a page can hand it to the
 * engines' hosts (`connectEngine({ config })` clones it).
 */
export interface FleetWiring {
  /** The relay, or null: BroadcastChannel only (tabs of this browser). */
  readonly relay: RelayConfig | null
  /** Why there is no relay, shown to the user; null when there is one. */
  readonly relayNotice: string | null
  /** Prefix of channel, room, host and log names, so two demos on one relay or origin never meet. */
  readonly namespace: string
  /**
   * This fleet's id (see `fleetIdOf`): rooms, channels, hosts and logs are named after it,
   * so devices of two browsers never write the same source into the same room.
   */
  readonly fleet: string
}

/**
 * What a host's links are made of besides the wiring. A worker uses the platform's
 * (`BroadcastChannel`, `WebSocket`); tests pass in-memory channels and the `ws` package.
 */
export interface LinkTransports {
  /** Tab channel factory for `BroadcastChannelProvider`; default the platform `BroadcastChannel`. */
  readonly openChannel?: OpenTabChannel
  /** WebSocket implementation where there is no global one (Node 20: the `ws` package). */
  readonly WebSocket?: new (url: string) => RelaySocket
}

export const DEFAULT_NAMESPACE = 'tidemark-demo'

/**
 * One device's tab channel in one epoch (used when there is no relay). Each device has its own
 * channel, as it has its own room on a relay: the dashboards listen to every device, devices
 * never hear each other, so a device's document holds its own state only.
 */
export function deviceChannelName(wiring: FleetWiring, epoch: string, device: string): string {
  return `${wiring.namespace}:${wiring.fleet}:${epoch}:${device}`
}

/**
 * The fleet of one epoch on the relay, `<namespace>/<fleet>/<epoch>`: its devices' rooms and its
 * directory are under it. The epoch is part of it because only engines of one epoch can merge.
 *
 * @example
 * relayFleetName(wiring, 'w2000-l10000-a1') // 'tidemark-demo/fk2j9x0ab/w2000-l10000-a1'
 */
export function relayFleetName(wiring: FleetWiring, epoch: string): string {
  return `${wiring.namespace}/${wiring.fleet}/${epoch}`
}

/** A device's room on the relay: `<fleet>/<device>`. It holds that device's replica alone. */
export function deviceRoomName(wiring: FleetWiring, epoch: string, device: string): string {
  return `${relayFleetName(wiring, epoch)}/${device}`
}

/** The device of a room name (`tidemark-demo/<fleet id>/<epoch>/d07` → `d07`). */
export function deviceOfRoom(room: string): string {
  return room.slice(room.lastIndexOf('/') + 1)
}

/** The relay's directory of the epoch's device rooms, which the dashboards follow. */
export function directoryRoomName(wiring: FleetWiring, epoch: string): string {
  return `${relayFleetName(wiring, epoch)}/_directory`
}

/**
 * The engine host of one device in one epoch: `connectEngine`'s name, so every page of the
 * browser that opens the device (the dashboard, a `?device=` tab) reaches the same worker. It
 * also names the device's write-ahead log (`tidemark-log-<name>`), kept across reloads.
 *
 * @example
 * deviceHostName(wiring, 'w2000-l10000-a1', 'd07') // 'tidemark-demo:fk2j9x0ab:w2000-l10000-a1:d07'
 */
export function deviceHostName(wiring: FleetWiring, epoch: string, device: string): string {
  return `${wiring.namespace}:${wiring.fleet}:${epoch}:${device}`
}

/**
 * The dashboard engine's host. Every setting that shapes the dashboard engine or what it follows
 * is in the name, so dashboards of the same settings share one host, and a page that changes
 * them gets a host of its own.
 *
 * @example
 * dashboardHostName(wiring, DEFAULT_SETTINGS) // 'tidemark-demo:fk2j9x0ab:w2000-l10000-a1:dashboard-o1000-i3000-n12'
 */
export function dashboardHostName(wiring: FleetWiring, settings: FleetSettings): string {
  const { outOfOrdernessMs, idleTimeoutMs, deviceCount } = settings
  return `${wiring.namespace}:${wiring.fleet}:${epochOf(settings)}:dashboard-o${outOfOrdernessMs}-i${idleTimeoutMs}-n${deviceCount}`
}

/**
 * The wiring a host got from a page (structured data from outside the worker): checked field by
 * field, or a TypeError saying what is wrong.
 *
 * @example
 * const wiring = parseWiring(config.wiring)
 */
export function parseWiring(value: unknown): FleetWiring {
  if (typeof value !== 'object' || value === null) throw new TypeError(`the host's wiring must be an object, got ${String(value)}`)
  const { relay, namespace, fleet } = value as Record<string, unknown>
  if (typeof namespace !== 'string' || namespace.length === 0) throw new TypeError(`the host's wiring needs a namespace, got ${String(namespace)}`)
  if (typeof fleet !== 'string' || !FLEET_ID.test(fleet)) throw new TypeError(`the host's wiring needs a fleet id ([A-Za-z0-9-]{1,40}), got ${String(fleet)}`)
  if (relay === null) return { relay: null, relayNotice: null, namespace, fleet }
  const parsed = parseConfig({ relayUrl: (relay as { url?: unknown } | undefined)?.url, tokenUrl: (relay as { tokenUrl?: unknown } | undefined)?.tokenUrl })
  if (parsed === null) throw new TypeError('the host\'s wiring names no usable relay (expected { url: "ws://…", tokenUrl: "http://…" } or null)')
  return { relay: parsed, relayNotice: null, namespace, fleet }
}

/** The control channel of the fleet's pages in this browser. */
export function controlChannelName(wiring: FleetWiring): string {
  return `${wiring.namespace}:${wiring.fleet}:control`
}

const FLEET_KEY = 'tidemark-demo:fleet'
const FLEET_ID = /^[A-Za-z0-9-]{1,40}$/

/**
 * The fleet id: `?fleet=` when given (to join another browser's fleet), else the one this
 * browser remembers, else a new one (remembered). A device is one replica, and its log
 * lives in this browser: a device of the same name in another browser (or in a cleared
 * profile) is another replica, and two replicas writing one source into one room conflict
 * (`source_conflict`, one of them loses). Separate fleets keep them apart.
 *
 * @example
 * const fleet = fleetIdOf(new URLSearchParams(location.search), localStorage)
 */
export function fleetIdOf(params: URLSearchParams, storage: Pick<Storage, 'getItem' | 'setItem'> | null): string {
  const given = params.get('fleet')
  if (given !== null && FLEET_ID.test(given)) return given
  const remembered = storage?.getItem(FLEET_KEY) ?? null
  if (remembered !== null && FLEET_ID.test(remembered)) return remembered
  const fresh = `f${Math.random().toString(36).slice(2, 10)}`
  storage?.setItem(FLEET_KEY, fresh)
  return fresh
}

const PROBE_TIMEOUT_MS = 2_500

/**
 * Reads `/config.json` (written by `scripts/demo.mjs`) and checks that its relay answers.
 * Without a usable config, or with a relay that does not open a socket in time, the fleet runs
 * on BroadcastChannel alone and `relayNotice` says why.
 *
 * @example
 * const wiring = await loadWiring('f1', fetch, probeWebsocket)
 * if (wiring.relayNotice) showBanner(wiring.relayNotice)
 */
export async function loadWiring(
  fleet: string,
  fetchConfig: (path: string) => Promise<Response>,
  probe: (url: string) => Promise<string | null>,
): Promise<FleetWiring> {
  const base = { namespace: DEFAULT_NAMESPACE, fleet }
  const alone = 'devices sync through BroadcastChannel only, within this browser.'
  const config = await readConfig(fetchConfig)
  if (typeof config === 'string') return { ...base, relay: null, relayNotice: `${config}: ${alone}` }
  const failure = await probe(config.url)
  if (failure !== null) return { ...base, relay: null, relayNotice: `Relay ${config.url} ${failure}: ${alone}` }
  return { ...base, relay: config, relayNotice: null }
}

/** The relay `/config.json` names, or why there is none. */
async function readConfig(fetchConfig: (path: string) => Promise<Response>): Promise<RelayConfig | string> {
  let response: Response
  try {
    response = await fetchConfig('/config.json')
  } catch (error) {
    return `/config.json could not be fetched (${messageOf(error)})`
  }
  if (!response.ok) return `No /config.json (HTTP ${response.status}; start with \`pnpm start\` for the relay)`
  let json: unknown
  try {
    json = await response.json()
  } catch (error) {
    return `/config.json is not JSON (${messageOf(error)})`
  }
  return parseConfig(json) ?? '/config.json names no relay (expected { "relayUrl": "ws://…", "tokenUrl": "http://…" })'
}

function parseConfig(json: unknown): RelayConfig | null {
  if (typeof json !== 'object' || json === null) return null
  const { relayUrl, tokenUrl } = json as { relayUrl?: unknown; tokenUrl?: unknown }
  if (typeof relayUrl !== 'string' || !/^wss?:\/\//.test(relayUrl)) return null
  if (typeof tokenUrl !== 'string' || !/^https?:\/\//.test(tokenUrl)) return null
  return { url: relayUrl, tokenUrl }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/**
 * Null when a WebSocket to `url` opens within the timeout (the socket is closed at once), else
 * why not, as a phrase after the server's URL.
 *
 * @example
 * const failure = await probeWebsocket('ws://127.0.0.1:1234')
 * if (failure !== null) console.warn(`relay ${failure}`) // e.g. 'refused the connection'
 */
export function probeWebsocket(url: string): Promise<string | null> {
  return new Promise((resolve) => {
    let socket: WebSocket
    try {
      socket = new WebSocket(url)
    } catch (error) {
      resolve(`is not a usable WebSocket URL (${messageOf(error)})`)
      return
    }
    const timer = setTimeout(() => finish(`does not answer within ${PROBE_TIMEOUT_MS / 1000} s`), PROBE_TIMEOUT_MS)
    const finish = (failure: string | null): void => {
      clearTimeout(timer)
      socket.onopen = null
      socket.onerror = null
      if (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING) socket.close()
      resolve(failure)
    }
    socket.onopen = () => finish(null)
    socket.onerror = () => finish('refused the connection')
  })
}
