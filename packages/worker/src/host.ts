/**
 * `@tidemark/worker/host`: the worker side. The app's worker file calls `hostEngine` with the
 * engine's options, its log and a `setup` that connects its providers; pages reach it with
 * `connectEngine` from `@tidemark/worker`.
 *
 * @module @tidemark/worker/host
 */
export { hostEngine } from './host/hostEngine.ts'

export type { WorkerHost } from './host/hostEngine.ts'
export type { HostContext, HostEngineOptions, HostLogOptions } from './host/hostOptions.ts'
export type { HostMode } from './protocol/messages.ts'
