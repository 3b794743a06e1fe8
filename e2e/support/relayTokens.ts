/**
 * Relay tokens for the test pages: minted through a relay's development endpoint, as a local app
 * would get them, or signed here (for the tokens a relay must refuse).
 */
import { SignJWT } from 'jose'
import { RELAY_SECRET } from './relayProcess.ts'

/** A token from the relay's `GET /dev/token` for `query` (see the relay's README; a list repeats its parameter). */
export async function devToken(relay: { readonly httpUrl: string } | string, query: Readonly<Record<string, string | readonly string[]>>): Promise<string> {
  const base = typeof relay === 'string' ? relay.replace(/^ws/, 'http') : relay.httpUrl
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) for (const one of typeof value === 'string' ? [value] : value) params.append(name, one)
  const response = await fetch(`${base}/dev/token?${params}`)
  const body = (await response.json()) as { token?: string; error?: string }
  if (!response.ok || body.token === undefined) throw new Error(`dev token ${JSON.stringify(query)}: ${body.error ?? response.status}`)
  return body.token
}

/** A device's token: it writes the room `<room>/<source>`, the log of replica `source` and the source itself. */
export function deviceToken(relay: { readonly httpUrl: string } | string, room: string, source: string): Promise<string> {
  return devToken(relay, { role: 'device', room: `${room}/${source}`, replica: source, source })
}

/** A dashboard's token: it reads every room under `room`, writes nothing. */
export function dashboardToken(relay: { readonly httpUrl: string } | string, room: string): Promise<string> {
  return devToken(relay, { role: 'dashboard', rooms: `${room}/*` })
}

/** A token signed here: with the relays' secret unless `secret` is given, expiring at `expiresAt` (s since the epoch; default in an hour). */
export function signedToken(claims: Readonly<Record<string, unknown>>, options: { readonly secret?: string; readonly expiresAt?: number } = {}): Promise<string> {
  return new SignJWT({ ...claims })
    .setProtectedHeader({ alg: 'HS256' })
    .setExpirationTime(options.expiresAt ?? Math.floor(Date.now() / 1000) + 3600)
    .sign(new TextEncoder().encode(options.secret ?? RELAY_SECRET))
}

/**
 * The source of the storm device page opened with `seed`: `storm-device-<seed in base 36>`, a
 * name `claimSource({ prefix: 'storm-device' })` takes as its own, so the page holds it with a
 * Web Lock like any source it claims.
 */
export function stormSource(seed: number): string {
  return `storm-device-${seed.toString(36)}`
}
