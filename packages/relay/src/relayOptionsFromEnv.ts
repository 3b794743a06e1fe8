/**
 * The relay's configuration from environment variables (the `tidemark-relay` command).
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { MIN_SECRET_BYTES, TokenVerifier } from './auth/tokenVerifier.ts'
import { type RelayLogLevel, stderrLog } from './relayLog.ts'
import { DEFAULT_LIMITS, isLoopback, MAX_TIMER_MS, type RelayLimits, type RelayOptions, TIME_OPTIONS } from './relayOptions.ts'

/**
 * A configuration error: names the environment variable and says what is wrong with it.
 *
 * @example
 * try { relayOptionsFromEnv(process.env) } catch (error) {
 *   if (error instanceof RelayConfigError) console.error(error.variable, error.message)
 * }
 */
export class RelayConfigError extends Error {
  readonly variable: string

  constructor(variable: string, problem: string) {
    super(`${variable}: ${problem}`)
    this.name = 'RelayConfigError'
    this.variable = variable
  }
}

/**
 * Environment variables of each limit.
 *
 * @example
 * LIMIT_VARIABLES.maxRoomBytes // 'TIDEMARK_MAX_ROOM_BYTES'
 */
export const LIMIT_VARIABLES: Readonly<Record<keyof RelayLimits, string>> = {
  maxMessageBytes: 'TIDEMARK_MAX_MESSAGE_BYTES',
  updatesPerSecond: 'TIDEMARK_UPDATES_PER_SECOND',
  updateBurst: 'TIDEMARK_UPDATE_BURST',
  maxRooms: 'TIDEMARK_MAX_ROOMS',
  maxRoomsPerSubject: 'TIDEMARK_MAX_ROOMS_PER_SUBJECT',
  maxRoomBytes: 'TIDEMARK_MAX_ROOM_BYTES',
  idleRoomMs: 'TIDEMARK_IDLE_ROOM_MS',
  maxUnauthenticatedBytes: 'TIDEMARK_MAX_UNAUTHENTICATED_BYTES',
  authTimeoutMs: 'TIDEMARK_AUTH_TIMEOUT_MS',
  partStallMs: 'TIDEMARK_PART_STALL_MS',
  updateBytesPerSecond: 'TIDEMARK_UPDATE_BYTES_PER_SECOND',
  maxQueuedBytes: 'TIDEMARK_MAX_QUEUED_BYTES',
}

const LOG_LEVELS: readonly RelayLogLevel[] = ['info', 'warn', 'error']

function integer(env: Readonly<Record<string, string | undefined>>, variable: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const text = env[variable]
  if (text === undefined || text === '') return undefined
  const value = Number(text)
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new RelayConfigError(variable, `must be an integer in ${min}..${max}, got ${JSON.stringify(text)}`)
  }
  return value
}

/**
 * Reads the relay's options from the environment; throws a `RelayConfigError` naming the first
 * bad variable. `TIDEMARK_DEV_TOKENS=1` without a secret signs with a random one.
 *
 * | variable | default |
 * | --- | --- |
 * | `HOST` | `127.0.0.1` |
 * | `PORT` | `1234` (0: a free port) |
 * | `TIDEMARK_DATA_DIR` | `.tidemark-relay` (PGlite) |
 * | `DATABASE_URL` | PostgreSQL instead of PGlite |
 * | `REDIS_URL` | scale-out through Redis |
 * | `TIDEMARK_AUTH_SECRET` / `TIDEMARK_AUTH_PUBLIC_KEY` | one of them (a PEM file path for the key; the file may hold several) |
 * | `TIDEMARK_AUTH_PREVIOUS_SECRET` | none; with the secret, a second one accepted while issuers switch |
 * | `TIDEMARK_DEV_TOKENS` | `0`; `1` serves `/dev/token` (loopback `HOST` only) |
 * | `TIDEMARK_STORE_DEBOUNCE_MS` | `500` |
 * | `TIDEMARK_LOG` | `warn` (`info` also logs refusals) |
 * | limits | see `LIMIT_VARIABLES` |
 *
 * @example
 * const relay = await startRelay(relayOptionsFromEnv(process.env))
 */
export function relayOptionsFromEnv(env: Readonly<Record<string, string | undefined>>): RelayOptions & Required<Pick<RelayOptions, 'store' | 'log'>> {
  const host = env.HOST === undefined || env.HOST === '' ? '127.0.0.1' : env.HOST
  const port = integer(env, 'PORT', 0, 65_535) ?? 1234

  const databaseUrl = env.DATABASE_URL
  if (databaseUrl !== undefined && databaseUrl !== '' && !/^postgres(ql)?:\/\/./.test(databaseUrl)) {
    throw new RelayConfigError('DATABASE_URL', 'must be a postgres:// or postgresql:// URL')
  }
  const dataDir = env.TIDEMARK_DATA_DIR === undefined || env.TIDEMARK_DATA_DIR === '' ? '.tidemark-relay' : env.TIDEMARK_DATA_DIR
  const redisUrl = env.REDIS_URL === undefined || env.REDIS_URL === '' ? undefined : env.REDIS_URL
  if (redisUrl !== undefined) {
    let parsed: URL | undefined
    try {
      parsed = new URL(redisUrl)
    } catch {
      parsed = undefined
    }
    if (parsed === undefined || (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || parsed.hostname === '') {
      throw new RelayConfigError('REDIS_URL', 'must be a redis://host:port URL')
    }
  }

  const devTokensText = env.TIDEMARK_DEV_TOKENS ?? ''
  if (!['', '0', '1'].includes(devTokensText)) throw new RelayConfigError('TIDEMARK_DEV_TOKENS', `must be 1 or 0, got ${JSON.stringify(devTokensText)}`)
  const devTokens = devTokensText === '1'
  if (devTokens && !isLoopback(host)) {
    throw new RelayConfigError('TIDEMARK_DEV_TOKENS', `dev tokens are served only on a loopback HOST (127.0.0.1, ::1, localhost), not ${host}`)
  }

  const secretText = env.TIDEMARK_AUTH_SECRET ?? ''
  const keyPath = env.TIDEMARK_AUTH_PUBLIC_KEY ?? ''
  if (secretText !== '' && keyPath !== '') throw new RelayConfigError('TIDEMARK_AUTH_PUBLIC_KEY', 'set either TIDEMARK_AUTH_SECRET or TIDEMARK_AUTH_PUBLIC_KEY, not both')
  let auth: RelayOptions['auth']
  const previousText = env.TIDEMARK_AUTH_PREVIOUS_SECRET ?? ''
  if (previousText !== '' && secretText === '') {
    throw new RelayConfigError('TIDEMARK_AUTH_PREVIOUS_SECRET', 'is accepted beside TIDEMARK_AUTH_SECRET only (a public key file may hold several keys instead)')
  }
  if (secretText !== '') {
    const secret = new TextEncoder().encode(secretText)
    if (secret.byteLength < MIN_SECRET_BYTES) throw new RelayConfigError('TIDEMARK_AUTH_SECRET', `must be at least ${MIN_SECRET_BYTES} bytes, got ${secret.byteLength}`)
    const previous = new TextEncoder().encode(previousText)
    if (previousText !== '' && previous.byteLength < MIN_SECRET_BYTES) {
      throw new RelayConfigError('TIDEMARK_AUTH_PREVIOUS_SECRET', `must be at least ${MIN_SECRET_BYTES} bytes, got ${previous.byteLength}`)
    }
    auth = previousText === '' ? { secret } : { secret, previousSecrets: [previous] }
  } else if (keyPath !== '') {
    if (devTokens) throw new RelayConfigError('TIDEMARK_DEV_TOKENS', 'dev tokens are signed with TIDEMARK_AUTH_SECRET; with a public key the relay cannot sign')
    let pem: string
    try {
      pem = readFileSync(keyPath, 'utf8')
    } catch (error) {
      throw new RelayConfigError('TIDEMARK_AUTH_PUBLIC_KEY', `cannot read ${keyPath}: ${error instanceof Error ? error.message : String(error)}`)
    }
    auth = { publicKeyPem: pem }
    try {
      new TokenVerifier(auth)
    } catch (error) {
      throw new RelayConfigError('TIDEMARK_AUTH_PUBLIC_KEY', error instanceof Error ? error.message : String(error))
    }
  } else if (devTokens) {
    auth = { secret: new Uint8Array(randomBytes(32)) }
  } else {
    throw new RelayConfigError('TIDEMARK_AUTH_SECRET', 'set TIDEMARK_AUTH_SECRET (HS256) or TIDEMARK_AUTH_PUBLIC_KEY (a PEM file path), or TIDEMARK_DEV_TOKENS=1 for local development')
  }

  const limits: Partial<Record<keyof RelayLimits, number>> = {}
  for (const [name, variable] of Object.entries(LIMIT_VARIABLES) as [keyof RelayLimits, string][]) {
    const value = integer(env, variable, 1, TIME_OPTIONS.has(name) ? MAX_TIMER_MS : undefined)
    if (value !== undefined) limits[name] = value
  }
  const maxRooms = limits.maxRooms ?? DEFAULT_LIMITS.maxRooms
  if (limits.maxRoomsPerSubject !== undefined && limits.maxRoomsPerSubject > maxRooms) {
    throw new RelayConfigError('TIDEMARK_MAX_ROOMS_PER_SUBJECT', `must be at most TIDEMARK_MAX_ROOMS (${maxRooms}), got ${limits.maxRoomsPerSubject}`)
  }
  const maxRoomBytes = limits.maxRoomBytes ?? DEFAULT_LIMITS.maxRoomBytes
  if (limits.maxQueuedBytes !== undefined && limits.maxQueuedBytes < 2 * maxRoomBytes) {
    throw new RelayConfigError('TIDEMARK_MAX_QUEUED_BYTES', `must be at least 2 × TIDEMARK_MAX_ROOM_BYTES (${2 * maxRoomBytes}), got ${limits.maxQueuedBytes}`)
  }
  const writeWindowMs = integer(env, 'TIDEMARK_STORE_DEBOUNCE_MS', 1, MAX_TIMER_MS)
  const level = env.TIDEMARK_LOG === undefined || env.TIDEMARK_LOG === '' ? 'warn' : env.TIDEMARK_LOG
  if (!LOG_LEVELS.includes(level as RelayLogLevel)) throw new RelayConfigError('TIDEMARK_LOG', `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`)

  return {
    host,
    port,
    store: databaseUrl !== undefined && databaseUrl !== '' ? { databaseUrl } : { dataDir },
    ...(redisUrl === undefined ? {} : { redisUrl }),
    auth,
    devTokens,
    limits,
    ...(writeWindowMs === undefined ? {} : { persistence: { writeWindowMs } }),
    log: stderrLog(level as RelayLogLevel),
  }
}
