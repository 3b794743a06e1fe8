/**
 * Room names. A device's document is the room `<fleet>/<device>`; the relay keeps one directory
 * room per fleet, `<fleet>/_directory`. Names are `[A-Za-z0-9._-]+` segments joined by `/`, at
 * most 200 characters; a segment starting with `_` is reserved for the relay.
 */

/**
 * Longest room name accepted.
 *
 * @example
 * if (room.length > MAX_ROOM_NAME_LENGTH) throw new RangeError('room name too long')
 */
export const MAX_ROOM_NAME_LENGTH = 200

/**
 * Last segment of a fleet's directory room.
 *
 * @example
 * `fleet-a/${DIRECTORY_SEGMENT}` // 'fleet-a/_directory'
 */
export const DIRECTORY_SEGMENT = '_directory'

const SEGMENT = /^[A-Za-z0-9._-]+$/

/**
 * What a room name is: a device room, a fleet's directory, or not a room at all (with why).
 *
 * @example
 * classifyRoom('fleet-a/d07') // { kind: 'device', fleet: 'fleet-a' }
 * classifyRoom('fleet-a/_directory') // { kind: 'directory', fleet: 'fleet-a' }
 * classifyRoom('fleet-a/_x') // { kind: 'invalid', problem: 'segment "_x" is reserved' }
 */
export type RoomKind =
  | { readonly kind: 'device'; readonly fleet: string }
  | { readonly kind: 'directory'; readonly fleet: string }
  | { readonly kind: 'invalid'; readonly problem: string }

/**
 * Classifies a room name (see `RoomKind`). A room needs at least two segments: the fleet (every
 * segment but the last) and the device.
 *
 * @example
 * classifyRoom('fleet-a') // { kind: 'invalid', problem: 'a room is <fleet>/<device>' }
 */
export function classifyRoom(name: string): RoomKind {
  if (name.length === 0 || name.length > MAX_ROOM_NAME_LENGTH) return { kind: 'invalid', problem: `a room name has 1..${MAX_ROOM_NAME_LENGTH} characters` }
  const segments = name.split('/')
  if (segments.length < 2) return { kind: 'invalid', problem: 'a room is <fleet>/<device>' }
  for (const segment of segments) {
    if (!SEGMENT.test(segment)) return { kind: 'invalid', problem: 'segments are [A-Za-z0-9._-]+ joined by /' }
  }
  const last = segments.at(-1) as string
  for (const segment of segments.slice(0, -1)) {
    if (segment.startsWith('_')) return { kind: 'invalid', problem: `segment ${JSON.stringify(segment)} is reserved` }
  }
  const fleet = segments.slice(0, -1).join('/')
  if (last === DIRECTORY_SEGMENT) return { kind: 'directory', fleet }
  if (last.startsWith('_')) return { kind: 'invalid', problem: `segment ${JSON.stringify(last)} is reserved` }
  return { kind: 'device', fleet }
}

/**
 * The directory room of a fleet.
 *
 * @example
 * directoryRoom('fleet-a') // 'fleet-a/_directory'
 */
export function directoryRoom(fleet: string): string {
  return `${fleet}/${DIRECTORY_SEGMENT}`
}

/**
 * True when a token's room pattern admits `room`: an exact name, or a prefix ending in `/*`
 * (`fleet-a/*` admits `fleet-a/d07`, `fleet-a/_directory` and deeper names under `fleet-a/`).
 *
 * @example
 * roomPatternAdmits('fleet-a/*', 'fleet-a/d07') // true
 * roomPatternAdmits('fleet-a/d07', 'fleet-a/d08') // false
 */
export function roomPatternAdmits(pattern: string, room: string): boolean {
  if (pattern.endsWith('/*')) return room.startsWith(pattern.slice(0, -1)) && room.length > pattern.length - 1
  return pattern === room
}

/**
 * Why a token's room pattern is malformed, or null.
 *
 * @example
 * roomPatternProblem('fleet-a/*') // null
 * roomPatternProblem('fleet-a*') // 'room pattern "fleet-a*" is neither a room name nor <prefix>/*'
 */
export function roomPatternProblem(pattern: unknown): string | null {
  if (typeof pattern !== 'string') return `room pattern ${String(pattern)} is not a string`
  const prefix = pattern.endsWith('/*') ? pattern.slice(0, -2) : pattern
  const ok = prefix.length > 0 && prefix.length <= MAX_ROOM_NAME_LENGTH && prefix.split('/').every((segment) => SEGMENT.test(segment))
  return ok ? null : `room pattern ${JSON.stringify(pattern.slice(0, 80))} is neither a room name nor <prefix>/*`
}
