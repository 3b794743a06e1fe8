import type * as Y from 'yjs'
import type { ReplicaEntries } from './replicaEntries.ts'

/**
 * What one remote transaction brought, collected by observers and read after commit: the
 * binding merges it as one batch, so a peer's update causes one notification.
 *
 * @example
 * const batch = emptyBatch()
 * array.observe((event) => append(batch.added, log, event.changes.added))
 */
export interface RemoteBatch {
  readonly metaKeys: Set<string>
  /** The items added to each log: read once the transaction's meta entries are known (which session wrote each decides whether it is merged). */
  readonly added: Map<ReplicaEntries, Y.Item[]>
  /** The items deleted from each log (their content readable until the transaction's cleanup, after the binding has read it). */
  readonly removed: Map<ReplicaEntries, Y.Item[]>
  /** A meta entry written for this replica under another configuration: an earlier session's, whose log entries are not this one's to merge. */
  foreignOwnMeta: boolean
}

/**
 * A batch nothing has been collected into yet.
 *
 * @example
 * let batch = emptyBatch()
 */
export function emptyBatch(): RemoteBatch {
  return { metaKeys: new Set(), added: new Map(), removed: new Map(), foreignOwnMeta: false }
}

/**
 * Adds `items` (the items one array event added or deleted) to what `log` brought.
 *
 * @example
 * append(batch.removed, log, event.changes.deleted)
 */
export function append(into: Map<ReplicaEntries, Y.Item[]>, log: ReplicaEntries, items: ReadonlySet<Y.Item>): void {
  let list = into.get(log)
  if (list === undefined) {
    list = []
    into.set(log, list)
  }
  for (const item of items) list.push(item)
}

/**
 * The values `items` hold: those of the sessions (Yjs clients) in `skip` apart, second.
 *
 * @example
 * const [merged, earlier] = contentOf(batch.added.get(log) ?? [], foreignSessions)
 */
export function contentOf(items: Iterable<Y.Item>, skip?: ReadonlySet<number>): [unknown[], unknown[]] {
  const content: [unknown[], unknown[]] = [[], []]
  // One value at a time: one item can hold a whole push of entries, more than a call takes as arguments.
  for (const item of items) for (const value of item.content.getContent()) content[skip?.has(item.id.client) === true ? 1 : 0].push(value)
  return content
}
