/**
 * `@tidemark/idb/archive`: `finalArchive`, the opt-in final-window archive. Given to a
 * persistence (`indexedDbPersistence({ name, archive: finalArchive() })`), it keeps every
 * final window result past `retention`, read back with `persistence.archive(query)`. Apps
 * that keep no history leave it out, and neither load it nor pay for it at runtime.
 *
 * @module @tidemark/idb/archive
 */
export { DEFAULT_ARCHIVE_LIMIT, finalArchive } from './history/finalArchive.ts'

export type { FinalArchiveOptions } from './history/finalArchive.ts'
