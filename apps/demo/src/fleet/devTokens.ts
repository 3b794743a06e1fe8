import type { RelayToken } from '@tidemark/yjs'
import type { RelayConfig } from './fleetWiring.ts'

/**
 * Relay tokens from the relay's development endpoint (`TIDEMARK_DEV_TOKENS=1`, loopback only),
 * which `scripts/demo.mjs` turns on. Each is a function: the relay client calls it on every
 * connection, so a relay restarted with a new secret, or a token past its expiry, is met with a
 * fresh one. A real deployment hands tokens out from its own login instead.
 */
function devToken(relay: RelayConfig, query: Readonly<Record<string, string | readonly string[]>>): RelayToken {
  const url = new URL(relay.tokenUrl)
  for (const [name, value] of Object.entries(query)) {
    // A repeated parameter for several values (`source=d07&source=d07~*`).
    for (const one of typeof value === 'string' ? [value] : value) url.searchParams.append(name, one)
  }
  return async () => {
    const response = await fetch(url, { cache: 'no-store' })
    const body = (await response.json()) as { token?: unknown; error?: unknown }
    if (!response.ok || typeof body.token !== 'string') throw new Error(`no relay token from ${url.origin}: ${String(body.error ?? `HTTP ${response.status}`)}`)
    return body.token
  }
}

/**
 * A device's token: it may write `room` (its own), the log of replica `replica` and the cells and
 * clocks of `sources` (names, or prefixes ending in `*`: `deviceSourceGrant`), and nothing else.
 *
 * @example
 * connectRelay({ url: relay.url, token: deviceToken(relay, 'tidemark-demo/f1/w2000-l10000-a1/d01', engine.replicaId, ['d01', 'd01~*']) })
 */
export function deviceToken(relay: RelayConfig, room: string, replica: string, sources: readonly string[]): RelayToken {
  return devToken(relay, { role: 'device', room, replica, source: sources })
}

/**
 * A dashboard's token: it reads every room under `fleet` (its devices' rooms and its directory)
 * and writes nothing.
 *
 * @example
 * connectRelay({ url: relay.url, token: dashboardToken(relay, 'tidemark-demo/f1/w2000-l10000-a1') })
 */
export function dashboardToken(relay: RelayConfig, fleet: string): RelayToken {
  return devToken(relay, { role: 'dashboard', rooms: `${fleet}/*` })
}
