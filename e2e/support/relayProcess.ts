/**
 * Tidemark relays for the browser tests: each a child process running the relay command from
 * its sources (as `pnpm relay` does, through the relay package's `scripts/relayChild.ts`) on
 * 127.0.0.1, with development tokens, on a data directory of its own (a copy of the run's
 * initialized PGlite directory, made by globalSetup.ts), stopped by its PID. Redis for the
 * scale-out test comes from the relay package's own starter.
 */
import { cpSync, mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { killRelayChildren, type RelayChild, type RelayExit, readRelayMetrics, spawnRelayChild } from '../../packages/relay/scripts/relayChild.ts'

export type { RelayExit }

/** The HS256 secret every test relay verifies with; tests sign their own tokens with it too. */
export const RELAY_SECRET = 'tidemark e2e relays: an HS256 secret of 32+ bytes'

/** A running relay process, with the data directory it runs on. */
export interface RelayProcess extends RelayChild {
  readonly dataDir: string
}

/** What the relay processes of the whole run write into (globalSetup.ts sets them). */
function runDirs(): { readonly template: string; readonly tmp: string } {
  const template = process.env.TIDEMARK_E2E_RELAY_TEMPLATE
  const tmp = process.env.TIDEMARK_E2E_TMP
  if (template === undefined || tmp === undefined) throw new Error('e2e: no relay template: run the suite through e2e/playwright.config.ts (its globalSetup makes one)')
  return { template, tmp }
}

/**
 * A new relay data directory: a copy of the run's initialized PGlite directory (initializing
 * one takes seconds; copying it, a fraction of one). globalSetup's teardown removes it.
 */
export function relayDataDir(): string {
  const { template, tmp } = runDirs()
  const dir = mkdtempSync(join(tmp, 'relay-'))
  cpSync(template, dir, { recursive: true })
  return dir
}

/**
 * Starts a relay on `dataDir` (on `port`, default a free one) and waits for its ready line.
 * `redisUrl` joins it to a scale-out group; `env` sets other variables (limits, `TIDEMARK_LOG`).
 *
 * @example
 * const relay = await startRelayProcess({ dataDir: relayDataDir() })
 * await relay.stop('SIGKILL')
 * const again = await startRelayProcess({ dataDir: relay.dataDir, port: relay.port })
 */
export async function startRelayProcess(options: {
  readonly dataDir: string
  readonly port?: number
  readonly redisUrl?: string
  readonly env?: Readonly<Record<string, string>>
}): Promise<RelayProcess> {
  const env: Record<string, string> = {
    PORT: String(options.port ?? 0),
    TIDEMARK_DATA_DIR: options.dataDir,
    TIDEMARK_AUTH_SECRET: RELAY_SECRET,
    TIDEMARK_DEV_TOKENS: '1',
    ...(options.redisUrl === undefined ? {} : { REDIS_URL: options.redisUrl }),
    ...options.env,
  }
  const child = await spawnRelayChild({ env })
  return { ...child, dataDir: options.dataDir }
}

/** Kills (SIGKILL, by PID) every relay of this worker still running: a failed test must not leave one behind. */
export const killRelays = killRelayChildren

/** One metric of a relay (`GET /metrics`), 0 when it is absent. */
export async function relayMetric(relay: Pick<RelayProcess, 'httpUrl'>, name: string): Promise<number> {
  return (await readRelayMetrics(relay.httpUrl)).get(name) ?? 0
}
