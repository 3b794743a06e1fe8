/**
 * What a verified token grants: the claims the relay reads, checked for shape.
 */
import { MAX_ROOM_NAME_LENGTH, roomPatternAdmits, roomPatternProblem } from '../rooms/roomName.ts'

/**
 * The claims of a relay token (a JWT), besides `exp` (required) and the other registered ones.
 *
 * @example
 * const device: TokenClaims = { sub: 'd07', role: 'device', rooms: ['fleet-a/d07'], replicas: ['d07'], sources: ['d07-temp'] }
 * const dashboard: TokenClaims = { sub: 'ops', role: 'dashboard', rooms: ['fleet-a/*'] }
 */
export interface TokenClaims {
  readonly sub: string
  /** `device` may write (its replicas and sources); `dashboard` only reads. */
  readonly role: 'device' | 'dashboard'
  /** Exact room names, or prefixes ending in `/*`. */
  readonly rooms: readonly string[]
  /** Device: replica ids whose log array and meta entry it may write. */
  readonly replicas?: readonly string[]
  /**
   * Device: sources whose groups and clocks it may write: exact names, or prefixes ending in
   * `*` (`d07-*` admits `d07-temp` and every source a tab claims with `claimSource({ prefix: 'd07' })`).
   */
  readonly sources?: readonly string[]
}

/**
 * A verified token's grant, ready for the relay's checks.
 *
 * @example
 * grant.role === 'dashboard' // every update refused, read-only connection
 */
export interface AccessGrant {
  readonly subject: string
  readonly role: 'device' | 'dashboard'
  readonly rooms: readonly string[]
  readonly replicas: ReadonlySet<string>
  readonly sources: SourceGrant
  /** Expiry, in ms since the epoch. */
  readonly expiresAt: number
}

/**
 * The sources a token lets a device write: exact names, and prefixes (a pattern `d07-*`).
 *
 * @example
 * const sources = new SourceGrant(['d07-temp', 'd07-tab-*'])
 * sources.has('d07-tab-k2j9x0') // true
 * sources.has('d08-temp') // false
 */
export class SourceGrant {
  readonly #names: ReadonlySet<string>
  readonly #prefixes: readonly string[]

  /** `patterns`: exact names, or a non-empty prefix followed by one `*` at the end. */
  constructor(patterns: readonly string[]) {
    this.#names = new Set(patterns.filter((pattern) => !pattern.endsWith('*')))
    this.#prefixes = patterns.filter((pattern) => pattern.endsWith('*')).map((pattern) => pattern.slice(0, -1))
  }

  /** True when `source` is one of the names or starts with one of the prefixes. */
  has(source: string): boolean {
    return this.#names.has(source) || this.#prefixes.some((prefix) => source.startsWith(prefix))
  }
}

/** Why a `sources` pattern cannot be used, or null. */
function sourcePatternProblem(pattern: string): string | null {
  const star = pattern.indexOf('*')
  if (star === -1) return null
  if (star !== pattern.length - 1) return `sources: "*" may only end a pattern, in ${JSON.stringify(pattern)}`
  return star === 0 ? 'sources: a pattern needs a prefix before "*"' : null
}

const MAX_LIST = 10_000
const MAX_ID_LENGTH = 1024

function stringList(value: unknown, name: string, maxLength: number): readonly string[] | string {
  if (!Array.isArray(value)) return `${name} must be an array of strings`
  if (value.length > MAX_LIST) return `${name} lists more than ${MAX_LIST} values`
  for (const item of value) {
    if (typeof item !== 'string' || item.length === 0 || item.length > maxLength) return `${name} must hold strings of 1..${maxLength} characters`
  }
  return value as string[]
}

/**
 * Reads a verified token's payload into a grant, or says why its claims are unusable.
 *
 * @example
 * const grant = readGrant({ sub: 'ops', role: 'dashboard', rooms: ['fleet-a/*'], exp: 1_900_000_000 })
 * if (typeof grant === 'string') console.log('refused:', grant)
 */
export function readGrant(payload: Record<string, unknown>): AccessGrant | string {
  const { sub, role, rooms, replicas, sources, exp } = payload
  if (typeof sub !== 'string' || sub.length === 0) return 'sub must be a non-empty string'
  if (role !== 'device' && role !== 'dashboard') return `role must be "device" or "dashboard"`
  if (typeof exp !== 'number') return 'exp must be a number'
  const roomList = stringList(rooms, 'rooms', MAX_ROOM_NAME_LENGTH + 2)
  if (typeof roomList === 'string') return roomList
  if (roomList.length === 0) return 'rooms must list at least one room'
  for (const pattern of roomList) {
    const problem = roomPatternProblem(pattern)
    if (problem !== null) return problem
  }
  let replicaList: readonly string[] = []
  let sourceList: readonly string[] = []
  if (role === 'device') {
    const r = stringList(replicas ?? [], 'replicas', MAX_ID_LENGTH)
    if (typeof r === 'string') return r
    const s = stringList(sources ?? [], 'sources', MAX_ID_LENGTH)
    if (typeof s === 'string') return s
    for (const pattern of s) {
      const problem = sourcePatternProblem(pattern)
      if (problem !== null) return problem
    }
    replicaList = r
    sourceList = s
  }
  return {
    subject: sub,
    role,
    rooms: roomList,
    replicas: new Set(replicaList),
    sources: new SourceGrant(sourceList),
    // Whole seconds up, as the verifier reads it: a token it admitted is not closed at once.
    expiresAt: Math.ceil(exp) * 1000,
  }
}

/**
 * True when the grant admits `room`.
 *
 * @example
 * grantAdmits(grant, 'fleet-a/d07')
 */
export function grantAdmits(grant: AccessGrant, room: string): boolean {
  return grant.rooms.some((pattern) => roomPatternAdmits(pattern, room))
}
