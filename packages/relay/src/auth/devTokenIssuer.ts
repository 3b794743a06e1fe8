/**
 * Development tokens: `GET /dev/token` signs a token with the relay's own HS256 secret, so a
 * local demo needs no token service. Only served when the relay binds a loopback address.
 */
import { SignJWT } from 'jose'
import { roomPatternProblem } from '../rooms/roomName.ts'

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
    const ttl = ttlText === null ? DEFAULT_TTL_SECONDS : Number(ttlText)
    if (!Number.isSafeInteger(ttl) || ttl < 1 || ttl > MAX_TTL_SECONDS) return { error: `ttl must be an integer of seconds in 1..${MAX_TTL_SECONDS}` }
    let claims: Record<string, unknown>
    if (role === 'device') {
      const room = query.get('room')
      const replica = query.get('replica')
      const sources = query.getAll('source')
      if (room === null || roomPatternProblem(room) !== null || room.endsWith('/*')) return { error: 'room must be a room name' }
      if (replica === null || replica.length === 0) return { error: 'replica is required' }
      if (sources.length === 0 || sources.some((source) => source.length === 0)) return { error: 'source is required (repeat it for several)' }
      claims = { role, rooms: [room], replicas: [replica], sources, sub: `dev:${replica}` }
    } else if (role === 'dashboard') {
      const rooms = (query.get('rooms') ?? '').split(',').filter((pattern) => pattern.length > 0)
      if (rooms.length === 0) return { error: 'rooms is required (patterns separated by commas)' }
      const problem = rooms.map(roomPatternProblem).find((p) => p !== null)
      if (problem !== undefined && problem !== null) return { error: problem }
      claims = { role, rooms, sub: 'dev:dashboard' }
    } else {
      return { error: 'role must be device or dashboard' }
    }
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(claims.sub as string)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + ttl)
      .sign(this.#secret)
    return { token }
  }
}
