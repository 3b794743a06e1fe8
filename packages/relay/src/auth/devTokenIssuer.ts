/**
 * Development tokens: `GET /dev/token` signs a token with the relay's own HS256 secret, so a
 * local demo needs no token service. Only served when the relay binds a loopback address.
 */
import { SignJWT } from 'jose'
import { classifyRoom, roomPatternProblem } from '../rooms/roomName.ts'
import { readGrant } from './accessGrant.ts'

const DEFAULT_TTL_SECONDS = 3600
const MAX_TTL_SECONDS = 86_400

/**
 * Signs development tokens from query parameters:
 *
 *   role=device&room=<room>&replica=<id>&source=<source>[&source=…][&ttl=<s>]
 *   role=dashboard&rooms=<pattern>[,<pattern>…][&ttl=<s>]
 *
 * @example
 * const issuer = new DevTokenIssuer(secret)
 * const result = await issuer.issue(new URLSearchParams('role=dashboard&rooms=fleet-a/*'))
 * if ('token' in result) console.log(result.token)
 */
export class DevTokenIssuer {
  readonly #secret: Uint8Array

  constructor(secret: Uint8Array) {
    this.#secret = secret
  }

  /** A signed token, or why the query cannot get one. */
  async issue(query: URLSearchParams): Promise<{ readonly token: string } | { readonly error: string }> {
    const role = query.get('role')
    const ttlText = query.get('ttl')
    // Digits only: Number() would also read '1e3', '0x10', ' 5 ' and '' (as 0).
    const ttl = ttlText === null ? DEFAULT_TTL_SECONDS : /^\d{1,6}$/.test(ttlText) ? Number(ttlText) : Number.NaN
    if (!Number.isSafeInteger(ttl) || ttl < 1 || ttl > MAX_TTL_SECONDS) return { error: `ttl must be an integer of seconds in 1..${MAX_TTL_SECONDS}` }
    let claims: Record<string, unknown>
    if (role === 'device') {
      const room = query.get('room')
      const replica = query.get('replica')
      const sources = query.getAll('source')
      if (room === null || room.endsWith('/*')) return { error: 'room must be a room name' }
      const kind = classifyRoom(room)
      if (kind.kind !== 'device') return { error: `room ${JSON.stringify(room.slice(0, 80))}: ${kind.kind === 'invalid' ? kind.problem : 'a device token is for a device room'}` }
      if (replica === null || replica.length === 0) return { error: 'replica is required' }
      if (sources.length === 0 || sources.some((source) => source.length === 0)) return { error: 'source is required (repeat it for several)' }
      claims = { role, rooms: [room], replicas: [replica], sources, sub: `dev:${replica}` }
    } else if (role === 'dashboard') {
      const rooms = (query.get('rooms') ?? '').split(',').filter((pattern) => pattern.length > 0)
      if (rooms.length === 0) return { error: 'rooms is required (patterns separated by commas)' }
      const problem = rooms.map(dashboardPatternProblem).find((p) => p !== null)
      if (problem !== undefined && problem !== null) return { error: problem }
      claims = { role, rooms, sub: 'dev:dashboard' }
    } else {
      return { error: 'role must be device or dashboard' }
    }
    const exp = Math.floor(Date.now() / 1000) + ttl
    // Read as the relay reads every token: one it would refuse is not issued.
    const grant = readGrant({ ...claims, exp })
    if (typeof grant === 'string') return { error: grant }
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(claims.sub as string)
      .setIssuedAt()
      .setExpirationTime(exp)
      .sign(this.#secret)
    return { token }
  }
}

/** Why a dashboard's room pattern could never open a room, or null: a malformed one, or a room name that is no room. */
function dashboardPatternProblem(pattern: string): string | null {
  const problem = roomPatternProblem(pattern)
  if (problem !== null || pattern.endsWith('/*')) return problem
  const kind = classifyRoom(pattern)
  return kind.kind === 'invalid' ? `room ${JSON.stringify(pattern.slice(0, 80))}: ${kind.problem}` : null
}
