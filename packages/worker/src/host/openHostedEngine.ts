import { createEngine, type Engine, type EngineOptions } from '@tidemark/engine'
import { indexedDbPersistence, openEngine } from '@tidemark/idb'
import type { LogClaim } from '@tidemark/idb/log'
import type { HostEngineOptions } from './hostOptions.ts'

/**
 * Opens the hosted engine: over the origin's write-ahead log when the host claimed it (the
 * claim fences out any other writer), else in memory, empty on every host start (`log: false`).
 *
 * @example
 * const claim = await claimLog({ name: 'fleet', steal: false, locks: navigator.locks })
 * const engine = await openHostedEngine({ windows: tumbling(60_000) }, claim, {}, undefined)
 */
export async function openHostedEngine(
  engineOptions: EngineOptions,
  claim: LogClaim | null,
  log: HostEngineOptions['log'],
  indexedDB: IDBFactory | undefined,
): Promise<Engine> {
  if (claim === null || log === false) return createEngine(engineOptions)
  const persistence = indexedDbPersistence({
    name: claim.database,
    claim,
    ...(log?.durability === undefined ? {} : { durability: log.durability }),
    ...(log?.archive === undefined ? {} : { archive: log.archive }),
    ...(indexedDB === undefined ? {} : { indexedDB }),
  })
  return openEngine({ ...engineOptions, persistence, ...(log?.checkpointEvery === undefined ? {} : { checkpointEvery: log.checkpointEvery }) })
}
