/**
 * A relay of the benchmark: the `tidemark-relay` command run from its sources through the relay
 * package's `scripts/relayChild.ts`, configured by environment variables as an operator would,
 * bound to 127.0.0.1, stopped by its PID.
 */
import { killRelayChildren, type RelayChild, type RelayExit, readRelayMetrics, spawnRelayChild } from '../../packages/relay/scripts/relayChild.ts'

export type { RelayExit }

/**
 * A running relay process, named for the report.
 *
 * @example
 * const relay: RelayProcess = await spawnRelay('A', { PORT: '0', TIDEMARK_AUTH_SECRET: secret })
 * await relay.stop()
 */
export interface RelayProcess extends RelayChild {
  readonly name: string
  /** Lines the relay wrote to stderr (warnings and errors: it logs at `warn`), the last 200,000 characters' worth. */
  stderrLines(): readonly string[]
}

/** Kills (SIGKILL, by PID) every relay still running: an interrupted run must not leave one behind. */
export function killRelays(): void {
  void killRelayChildren()
}

/**
 * Starts the relay command with `env` and waits for its ready line; `nodeFlags` go to node
 * (e.g. `--cpu-prof`).
 *
 * @example
 * const a = await spawnRelay('A', { PORT: '0', TIDEMARK_DATA_DIR: dir, TIDEMARK_AUTH_SECRET: secret, REDIS_URL: redis.url })
 */
export async function spawnRelay(name: string, env: Record<string, string>, nodeFlags: readonly string[] = [], timeoutMs = 120_000): Promise<RelayProcess> {
  const child = await spawnRelayChild({ env, nodeFlags, timeoutMs, label: `relay ${name}` })
  return { ...child, name, stderrLines: () => child.stderr().split('\n').filter((line) => line !== '') }
}

/**
 * The relay's Prometheus metrics as `name{labels}` → value. A relay busy enough to leave a
 * scrape unanswered for 30 s is asked twice more before this rejects.
 *
 * @example
 * (await relayMetrics(relay.httpUrl)).get('tidemark_relay_updates_in_total')
 */
export function relayMetrics(httpUrl: string): Promise<Map<string, number>> {
  return readRelayMetrics(httpUrl, { timeoutMs: 30_000, attempts: 3 })
}
