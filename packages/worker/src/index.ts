/**
 * `@tidemark/worker`: one engine per origin, hosted in a worker. `connectEngine` connects a
 * page to it and returns a `RemoteEngine` that `@tidemark/react` reads like an engine; the
 * app's worker file calls `hostEngine` from `@tidemark/worker/host`. Every tab shares one
 * engine, one write-ahead log writer and one socket; the main thread only draws.
 *
 * @module @tidemark/worker
 */
export { connectEngine } from './page/connectEngine.ts'

export type { ConnectEngineOptions } from './page/connectEngine.ts'
export type { WorkerSourceClaim } from './page/sourceRetirement.ts'
export type { DedicatedWorkerFactory } from './page/hostWorker.ts'
export type { RemoteEngine, WorkerConnection } from './page/remoteEngine.ts'
export type { SharedWorkerFactory } from './page/sharedConnector.ts'
export type { HostMode } from './protocol/messages.ts'
