/**
 * The query string through which the driver tells a page who it is: `role`, `server` (the
 * sync URL the page must use), `room` and `seed`. The driver writes it (`stormPageUrl`), the
 * page side reads it (`parseStormQuery`); the app keeps any other parameter for itself.
 */
import type { StormRole } from './stormPageApi.ts'

/**
 * What a storm page is told.
 *
 * @example
 * const query: StormQuery = { role: 'device', server: 'ws://127.0.0.1:4001', room: 'storm-7', seed: 7 }
 */
export interface StormQuery {
  readonly role: StormRole
  /** The sync server's URL (for a partitioned device, its own proxy). */
  readonly server: string
  readonly room: string
  /** Seeds the page's readings (and whatever else the app seeds, e.g. reconnect jitter). */
  readonly seed: number
}

/** The parameters the storm query owns; a page's own parameters may not reuse them. */
const STORM_PARAMETERS: readonly string[] = ['role', 'server', 'room', 'seed']

/**
 * `page` (an absolute URL, which may carry the app's own parameters) with the storm query set,
 * and the app's own `params` for this page (an identity, an access token for the sync server);
 * `params` may not name a storm parameter.
 *
 * @example
 * stormPageUrl('http://127.0.0.1:4183/storm.html?shell=1', { role: 'device', server: 'ws://127.0.0.1:4001', room: 'r', seed: 7 })
 * // 'http://127.0.0.1:4183/storm.html?shell=1&role=device&server=ws%3A%2F%2F127.0.0.1%3A4001&room=r&seed=7'
 * stormPageUrl(page, query, { token: 'eyJ…' }) // …&seed=7&token=eyJ…
 */
export function stormPageUrl(page: string, query: StormQuery, params: Readonly<Record<string, string>> = {}): string {
  const url = new URL(page)
  url.searchParams.set('role', query.role)
  url.searchParams.set('server', query.server)
  url.searchParams.set('room', query.room)
  url.searchParams.set('seed', String(query.seed))
  for (const [name, value] of Object.entries(params)) {
    if (STORM_PARAMETERS.includes(name)) throw new RangeError(`stormPageUrl: the page parameter ${JSON.stringify(name)} is the storm's own (${STORM_PARAMETERS.join(', ')})`)
    if (typeof value !== 'string') throw new TypeError(`stormPageUrl: the page parameter ${JSON.stringify(name)} must be a string, got ${typeof value}`)
    url.searchParams.set(name, value)
  }
  return url.href
}

/**
 * Reads the storm query from `search` (`location.search`); throws naming every parameter that
 * is missing or malformed.
 *
 * @example
 * parseStormQuery('?role=dashboard&server=ws%3A%2F%2F127.0.0.1%3A4001&room=r&seed=7')
 * // { role: 'dashboard', server: 'ws://127.0.0.1:4001', room: 'r', seed: 7 }
 */
export function parseStormQuery(search: string): StormQuery {
  const params = new URLSearchParams(search)
  const problems: string[] = []
  const role = params.get('role')
  if (role !== 'device' && role !== 'dashboard') problems.push(`role must be device or dashboard, got ${JSON.stringify(role)}`)
  const server = params.get('server')
  if (server === null || server === '') problems.push('server (the sync URL) is missing')
  const room = params.get('room')
  if (room === null || room === '') problems.push('room is missing')
  const seedText = params.get('seed')
  const seed = Number(seedText)
  if (seedText === null || seedText === '' || !Number.isSafeInteger(seed)) problems.push(`seed must be an integer, got ${JSON.stringify(seedText)}`)
  if (problems.length > 0) throw new Error(`storm page query ${JSON.stringify(search)}: ${problems.join('; ')}`)
  return { role: role as StormRole, server: server as string, room: room as string, seed }
}
