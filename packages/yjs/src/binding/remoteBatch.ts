import type * as Y from 'yjs'
import type { ReplicaEntries } from './replicaEntries.ts'

/**
 * What one remote transaction brought, collected by observers and read after commit: the
 * binding merges it as one batch, so a peer's update causes one notification.
 *
 * @example
 * const batch = emptyBatch()
 * array.observe((event) => appendContent(batch.added, log, event.changes.added))
 */
export interface RemoteBatch {
  readonly metaKeys: Set<string>
  readonly added: Map<ReplicaEntries, unknown[]>
  readonly removed: Map<ReplicaEntries, unknown[]>
  /** A meta entry written for this replica under another configuration: an earlier session's, whose log entries are not this one's to merge. */
  foreignOwnMeta: boolean
  /** Entries added to this replica's log by a session that wrote a meta entry of another configuration for it before. */
  readonly foreignOwn: unknown[]
}

/**
 * A batch nothing has been collected into yet.
 *
 * @example
 * let batch = emptyBatch()
 */
export function emptyBatch(): RemoteBatch {
  return { metaKeys: new Set(), added: new Map(), removed: new Map(), foreignOwnMeta: false, foreignOwn: [] }
}

/**
 * Adds the values of `items` (the items one array event added or deleted) to what `log` brought.
 *
 * @example
 * appendContent(batch.removed, log, event.changes.deleted)
 */
export function appendContent(into: Map<ReplicaEntries, unknown[]>, log: ReplicaEntries, items: ReadonlySet<Y.Item>): void {
  let list = into.get(log)
  if (list === undefined) {
    list = []
    into.set(log, list)
  }
  for (const item of items) for (const value of item.content.getContent()) list.push(value)
}
