/**
 * The worker e2e app's settings, shared by its page (`workerPage.ts`), its host worker
 * (`workerHost.ts`) and the tests: the engine name every tab and the host agree on, and the
 * engine options the tests' ground truth (`tumblingTruth`) is computed with. Devices ingest
 * `@tidemark/storm`'s default `stormReading`, made for exactly this window and lateness.
 */
export { STORM_LATENESS_MS as WORKER_LATENESS_MS, STORM_WINDOW_MS as WORKER_WINDOW_MS } from './stormConfig.ts'

/** The name of the hosted engine: its locks, tab channel and log (`tidemark-log-e2e-worker`). */
export const WORKER_ENGINE_NAME = 'e2e-worker'

/** The relay room the host's document joins, and the replica id the host's engine writes under (its token names both). */
export const WORKER_ROOM = 'worker-e2e/host'
export const WORKER_REPLICA = 'e2e-worker-host'

/** What a page passes its host (`connectEngine({ config })`). */
export interface WorkerPageConfig {
  /** The relay (or a proxy in front of it) and a device token for `WORKER_ROOM`; null: no socket. */
  readonly relayUrl: string | null
  readonly token: string | null
}
