/**
 * `@tidemark/idb/memory`: `memoryPersistence`, the write-ahead log kept in memory, for tests
 * and for Node processes that need no durability. Browser apps use `indexedDbPersistence`
 * from `@tidemark/idb` and never load this entry.
 *
 * @module @tidemark/idb/memory
 */
export { memoryPersistence } from './store/memoryPersistence.ts'

export type { MemoryPersistenceOptions } from './store/memoryPersistence.ts'
