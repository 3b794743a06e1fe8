/**
 * The worker e2e app's settings, shared by its page (`workerPage.ts`), its host worker
 * (`workerHost.ts`) and the tests: the engine name every tab and the host agree on, and the
 * engine options the tests' ground truth (`tumblingTruth`) is computed with. Devices ingest
 * `@tidemark/storm`'s default `stormReading`, made for exactly this window and lateness.
 */
export { STORM_LATENESS_MS as WORKER_LATENESS_MS, STORM_WINDOW_MS as WORKER_WINDOW_MS } from './stormConfig.ts'

/** The name of the hosted engine: its locks, tab channel and log (`tidemark-log-e2e-worker`). */
export const WORKER_ENGINE_NAME = 'e2e-worker'

/** The Yjs room the host's websocket joins. */
export const WORKER_ROOM = 'worker-e2e'

/** What a page passes its host (`connectEngine({ config })`). */
export interface WorkerPageConfig {
  /** The sync server (or a proxy in front of it); null: no socket. */
  readonly syncUrl: string | null
}
