/**
 * Options of `startRelay`, their defaults, and their validation.
 */
import type { TokenKey } from './auth/tokenVerifier.ts'
import type { SqlClient } from './store/sqlClient.ts'
import type { RelayLog } from './relayLog.ts'
import { stderrLog } from './relayLog.ts'

/**
 * The relay's limits; each has a default and an environment variable (`relayOptionsFromEnv`).
 *
 * @example
 * await startRelay({ auth: { secret }, limits: { maxRoomBytes: 64 << 20 } })
 */
export interface RelayLimits {
  /** Largest WebSocket message (ws `maxPayload`); a larger one closes the socket (1009). Default 1 MiB. */
  readonly maxMessageBytes: number
  /** Messages per second one room connection may send on average (token bucket). Default 100. */
  readonly updatesPerSecond: number
  /** Messages one room connection may send in a burst. Default 1000. */
  readonly updateBurst: number
  /** Rooms loaded at once; opening one more unloads the longest-idle room, or is refused. Default 10,000. */
  readonly maxRooms: number
  /**
   * Rooms one token subject (`sub`) may hold open at once on this relay, across its sockets; one
   * more is refused (`subject-room-limit`). A room counts once however many of the subject's
   * connections hold it, from its admission (before it loads) until the last of them closes. So
   * one token, whatever its room patterns admit, cannot hold every room the relay may load. At
   * most `maxRooms`. Default a quarter of `maxRooms` (2,500 of 10,000), at least 1.
   */
  readonly maxRoomsPerSubject: number
  /**
   * Bytes a room may hold; updates past it are refused (`room-too-large`). Also what one sender
   * may have in parts at once, and the burst of `updateBytesPerSecond`. Default 16 MiB.
   */
  readonly maxRoomBytes: number
  /** How long a room nobody is connected to stays loaded before it is stored and unloaded, ms. Default 30 s. */
  readonly idleRoomMs: number
  /** Bytes a socket may send for rooms it has not opened yet. Default 1 MiB. */
  readonly maxUnauthenticatedBytes: number
  /** Time a new socket has to authenticate a room, ms. Default 10 s. */
  readonly authTimeoutMs: number
  /**
   * How long a message in parts may go with nothing more coming (no part, no byte on its socket)
   * before, when the relay's room for parts (4 × `maxRoomBytes`) is needed by other connections'
   * parts, it is let go and its room connection refused as `rate-limited` (the client joins again
   * and sends it anew), ms. Default 30 s.
   */
  readonly partStallMs: number
  /**
   * Bytes of sync step 2s and updates one sender (a token's subject) may send one room per second
   * on average, past a burst of `maxRoomBytes` (a room's whole state at a join always passes);
   * past it the room connection is refused as `rate-limited`. Awareness messages have a budget
   * of the same size apart, past which they are dropped unread. The relay decodes every update
   * it checks, and parses every presence, on its one thread, so this bounds what a sender costs
   * the other rooms. Default 256 KiB.
   */
  readonly updateBytesPerSecond: number
  /**
   * Bytes queued for one socket (what the relay sent it and its peer has not read yet) past which
   * the socket is cut as `slow-reader`. Past half of it the relay stops reading the socket until
   * what is queued drains, so what a client asks for (a room's whole state at each join) waits on
   * what it reads; what its rooms' other clients write still queues. At least 2 × `maxRoomBytes`
   * (a join's state, sent whole, must fit above the half). Default 4 × `maxRoomBytes` (64 MiB).
   */
  readonly maxQueuedBytes: number
}

/**
 * The default limits.
 *
 * @example
 * DEFAULT_LIMITS.maxMessageBytes // 1048576
 */
export const DEFAULT_LIMITS: RelayLimits = {
  maxMessageBytes: 1 << 20,
  updatesPerSecond: 100,
  updateBurst: 1000,
  maxRooms: 10_000,
  maxRoomsPerSubject: 2_500,
  maxRoomBytes: 16 << 20,
  idleRoomMs: 30_000,
  maxUnauthenticatedBytes: 1 << 20,
  authTimeoutMs: 10_000,
  partStallMs: 30_000,
  updateBytesPerSecond: 256 << 10,
  maxQueuedBytes: 64 << 20,
}

/**
 * Where rooms are stored: an embedded PGlite data directory, a PostgreSQL database, or a SQL
 * client of your own (PostgreSQL's SQL; the relay closes it when it closes).
 *
 * @example
 * const embedded: RelayStoreOption = { dataDir: '.tidemark-relay' }
 * const shared: RelayStoreOption = { databaseUrl: 'postgres://relay@db.internal/tidemark' }
 * const own: RelayStoreOption = { sql: await openPglite('/var/lib/relay') }
 */
export type RelayStoreOption = { readonly dataDir: string } | { readonly databaseUrl: string } | { readonly sql: SqlClient }

/**
 * When the store writes and compacts.
 *
 * @example
 * await startRelay({ auth: { secret }, persistence: { writeWindowMs: 200 } })
 */
export interface RelayPersistence {
  /** Accepted updates are written at most this long after the first of a batch arrived, ms. A relay killed without warning loses at most this window. Default 500. */
  readonly writeWindowMs: number
  /** A room is compacted once it has this many update rows. Default 256. */
  readonly compactAfterRows: number
  /** …or update bytes past both this and its snapshot's size. Default 16 KiB. */
  readonly compactAfterBytes: number
  /** Hocuspocus' store debounce (quiet time before a room's compaction check), ms. Default 2000. */
  readonly storeDebounceMs: number
  /** …and its longest delay under a steady stream of writes, ms. Default 10,000. */
  readonly storeMaxDebounceMs: number
}

/**
 * The default persistence timing.
 *
 * @example
 * DEFAULT_PERSISTENCE.writeWindowMs // 500
 */
export const DEFAULT_PERSISTENCE: RelayPersistence = {
  writeWindowMs: 500,
  compactAfterRows: 256,
  compactAfterBytes: 16 << 10,
  storeDebounceMs: 2000,
  storeMaxDebounceMs: 10_000,
}

/**
 * Options of `startRelay`. Only `auth` is required.
 *
 * @example
 * const options: RelayOptions = {
 *   host: '127.0.0.1',
 *   port: 1234,
 *   store: { dataDir: '.tidemark-relay' },
 *   auth: { secret: new TextEncoder().encode(process.env.TIDEMARK_AUTH_SECRET) },
 * }
 */
export interface RelayOptions {
  /** Address to bind. Default `127.0.0.1`. */
  readonly host?: string
  /** Port to bind; 0 picks a free one. Default 1234. */
  readonly port?: number
  /** Default `{ dataDir: '.tidemark-relay' }`. */
  readonly store?: RelayStoreOption
  /** `redis://…`: share rooms with the other relays on this Redis. */
  readonly redisUrl?: string
  /** How tokens are verified. */
  readonly auth: TokenKey
  /** Serve `GET /dev/token` (needs an HS256 secret and a loopback `host`). Default false. */
  readonly devTokens?: boolean
  readonly limits?: Partial<RelayLimits>
  readonly persistence?: Partial<RelayPersistence>
  /** Default: `warn` and `error` lines to stderr. */
  readonly log?: RelayLog
  /**
   * Log unhandled promise rejections (and count them) instead of letting Node end the process.
   * For a process that is only a relay (the CLI sets it); it changes the whole process. Default false.
   */
  readonly guardProcess?: boolean
  /** Clock for rate limits, idle rooms and token expiry. Default `Date.now`. */
  readonly now?: () => number
  /** Where the relay arms its deadlines (idle rooms, token expiry, the store's write window and retries, sockets' authentication deadline, Redis repairs). Default the global timers; a test gives fake ones with a fake `now`. */
  readonly timers?: RelayTimers
}

/**
 * Timers the relay arms its deadlines with, read against its `now`.
 *
 * @example
 * const timers: RelayTimers = { setTimeout: (run, ms) => setTimeout(run, ms), clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout) }
 */
export interface RelayTimers {
  /** Runs `run` once, `ms` from now; returns what `clearTimeout` takes. */
  setTimeout(run: () => void, ms: number): unknown
  /** Cancels a timer `setTimeout` returned, if it has not run. */
  clearTimeout(handle: unknown): void
}

/** The global timers, not holding the process open (a relay's sockets do that). */
export const GLOBAL_TIMERS: RelayTimers = {
  setTimeout(run, ms) {
    const timer = setTimeout(run, ms)
    timer.unref()
    return timer
  },
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
}

/**
 * Options with every default filled in.
 *
 * @example
 * const resolved = resolveRelayOptions({ auth: { secret } })
 * resolved.limits.maxRooms // 10000
 */
export interface ResolvedRelayOptions {
  readonly host: string
  readonly port: number
  readonly store: RelayStoreOption
  readonly redisUrl: string | undefined
  readonly auth: TokenKey
  readonly devTokens: boolean
  readonly limits: RelayLimits
  readonly persistence: RelayPersistence
  readonly log: RelayLog
  readonly guardProcess: boolean
  /** Clock for rate limits, idle rooms and token expiry. */
  readonly now: () => number
  readonly timers: RelayTimers
}

const OPTION_KEYS = new Set(['host', 'port', 'store', 'redisUrl', 'auth', 'devTokens', 'limits', 'persistence', 'log', 'guardProcess', 'now', 'timers'])

/**
 * True for an address only this machine can reach.
 *
 * @example
 * isLoopback('127.0.0.1') // true
 * isLoopback('0.0.0.0') // false
 */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
}

/**
 * Longest time a limit or persistence option may name, ms: 2^31 - 1, the longest timer Node
 * arms (a longer one fires after 1 ms).
 *
 * @example
 * MAX_TIMER_MS // 2147483647 (about 24.8 days)
 */
export const MAX_TIMER_MS = 2_147_483_647

/** The options that are durations, armed as timers: bounded by `MAX_TIMER_MS`. */
export const TIME_OPTIONS: ReadonlySet<string> = new Set(['idleRoomMs', 'authTimeoutMs', 'partStallMs', 'writeWindowMs', 'storeDebounceMs', 'storeMaxDebounceMs'])

/**
 * The default `maxRoomsPerSubject` for a relay loading `maxRooms`: a quarter of them, at least 1.
 * One token then holds at most a quarter of the rooms; it takes four subjects at their bound,
 * together, to fill the relay.
 *
 * @example
 * roomsPerSubjectFor(10_000) // 2500
 * roomsPerSubjectFor(2) // 1
 */
export function roomsPerSubjectFor(maxRooms: number): number {
  return Math.max(1, Math.floor(maxRooms / 4))
}

/**
 * The default `maxQueuedBytes` for a relay whose rooms hold at most `maxRoomBytes`: four rooms'
 * worth, so a reader whose reading stopped at half of it still takes a whole room's state at a
 * join, with as much again of its rooms' updates.
 *
 * @example
 * queuedBytesFor(16 << 20) // 67108864
 */
export function queuedBytesFor(maxRoomBytes: number): number {
  return Math.min(Number.MAX_SAFE_INTEGER, 4 * maxRoomBytes)
}

function positiveInteger(value: unknown, name: string, min = 1): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) throw new RangeError(`startRelay: ${name} must be an integer >= ${min}, got ${String(value)}`)
  return value
}

function duration(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > MAX_TIMER_MS) {
    throw new RangeError(`startRelay: ${name} must be an integer in 1..${MAX_TIMER_MS} (ms), got ${String(value)}`)
  }
  return value
}

/**
 * Validates options and fills in defaults; throws a TypeError or RangeError naming the first
 * bad option.
 *
 * @example
 * resolveRelayOptions({ auth: { secret }, port: -1 }) // RangeError: startRelay: port must be an integer in 0..65535, got -1
 */
export function resolveRelayOptions(options: RelayOptions): ResolvedRelayOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError('startRelay: options must be an object')
  for (const key of Object.keys(options)) if (!OPTION_KEYS.has(key)) throw new TypeError(`startRelay: unknown option ${key}`)
  const host = options.host ?? '127.0.0.1'
  if (typeof host !== 'string' || host.length === 0) throw new TypeError('startRelay: host must be a non-empty string')
  const port = options.port ?? 1234
  if (!Number.isSafeInteger(port) || port < 0 || port > 65_535) throw new RangeError(`startRelay: port must be an integer in 0..65535, got ${String(port)}`)
  const store = options.store ?? { dataDir: '.tidemark-relay' }
  if ('sql' in store) {
    if (typeof store.sql !== 'object' || store.sql === null || typeof store.sql.query !== 'function' || typeof store.sql.transaction !== 'function') {
      throw new TypeError('startRelay: store.sql must be a SqlClient (query, transaction, close)')
    }
  } else if ('databaseUrl' in store) {
    if (typeof store.databaseUrl !== 'string' || !/^postgres(ql)?:\/\//.test(store.databaseUrl)) throw new TypeError('startRelay: store.databaseUrl must be a postgres:// URL')
  } else if (typeof store.dataDir !== 'string' || store.dataDir.length === 0) {
    throw new TypeError('startRelay: store.dataDir must be a directory path')
  }
  if (options.redisUrl !== undefined && (typeof options.redisUrl !== 'string' || !/^rediss?:\/\//.test(options.redisUrl))) throw new TypeError('startRelay: redisUrl must be a redis:// URL')
  if (typeof options.auth !== 'object' || options.auth === null || !('secret' in options.auth || 'publicKeyPem' in options.auth)) {
    throw new TypeError('startRelay: auth must be { secret } or { publicKeyPem }')
  }
  const devTokens = options.devTokens ?? false
  if (devTokens && !('secret' in options.auth)) throw new TypeError('startRelay: devTokens needs auth.secret to sign tokens with')
  if (devTokens && !isLoopback(host)) throw new TypeError(`startRelay: devTokens is refused unless host is a loopback address, got ${host}`)
  for (const [group, defaults] of [['limits', DEFAULT_LIMITS], ['persistence', DEFAULT_PERSISTENCE]] as const) {
    for (const key of Object.keys(options[group] ?? {})) if (!(key in defaults)) throw new TypeError(`startRelay: unknown option ${group}.${key}`)
  }
  const given = { ...DEFAULT_LIMITS, ...options.limits }
  for (const [name, value] of Object.entries(given)) (TIME_OPTIONS.has(name) ? duration : positiveInteger)(value, `limits.${name}`)
  const limits: RelayLimits = {
    ...given,
    maxRoomsPerSubject: options.limits?.maxRoomsPerSubject ?? roomsPerSubjectFor(given.maxRooms),
    maxQueuedBytes: options.limits?.maxQueuedBytes ?? queuedBytesFor(given.maxRoomBytes),
  }
  if (limits.maxRoomsPerSubject > limits.maxRooms) {
    throw new RangeError(`startRelay: limits.maxRoomsPerSubject must be at most limits.maxRooms (${limits.maxRooms}), got ${limits.maxRoomsPerSubject}`)
  }
  // Checked when given: the default (4 × maxRoomBytes) stops at 2^53 − 1.
  if (options.limits?.maxQueuedBytes !== undefined && limits.maxQueuedBytes < 2 * limits.maxRoomBytes) {
    throw new RangeError(`startRelay: limits.maxQueuedBytes must be at least 2 × limits.maxRoomBytes (${2 * limits.maxRoomBytes}), got ${limits.maxQueuedBytes}`)
  }
  const persistence = { ...DEFAULT_PERSISTENCE, ...options.persistence }
  for (const [name, value] of Object.entries(persistence)) (TIME_OPTIONS.has(name) ? duration : positiveInteger)(value, `persistence.${name}`)
  for (const name of ['log', 'now'] as const) {
    if (options[name] !== undefined && typeof options[name] !== 'function') throw new TypeError(`startRelay: ${name} must be a function`)
  }
  const timers = options.timers
  if (timers !== undefined && (typeof timers !== 'object' || timers === null || typeof timers.setTimeout !== 'function' || typeof timers.clearTimeout !== 'function')) {
    throw new TypeError('startRelay: timers must be { setTimeout, clearTimeout }')
  }
  return {
    host,
    port,
    store,
    redisUrl: options.redisUrl,
    auth: options.auth,
    devTokens,
    limits,
    persistence,
    log: options.log ?? stderrLog('warn'),
    guardProcess: options.guardProcess === true,
    now: options.now ?? Date.now,
    timers: timers ?? GLOBAL_TIMERS,
  }
}
