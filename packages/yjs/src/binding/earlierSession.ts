/**
 * What this replica's own log brings from an earlier session of it: the cells it held that the
 * engine has dropped since (retired at bind), and the meta entries a remote transaction wrote
 * for this replica (another configuration's session, whose entries are not this one's to merge).
 */
import { type CellAddress, type CellEntry, cellKey } from '@tidemark/engine'
import * as Y from 'yjs'
import type { ReadEntry } from './replicaEntries.ts'

/**
 * The cells of `sources` that `previous` (a log as it was read) holds and `cells` (the engine's state) does not.
 *
 * @example
 * const expired = droppedSince(ownLog.reread(), state.cells, new Set(['d1']))
 */
export function droppedSince(previous: readonly ReadEntry[], cells: readonly CellEntry[], sources: ReadonlySet<string>): CellAddress[] {
  const dropped: CellAddress[] = []
  if (previous.length === 0) return dropped
  const held = new Set(cells.map(({ address: a }) => cellKey(a.window, a.key, a.start, a.source)))
  for (const read of previous) {
    if (read.kind !== 'group' || !sources.has(read.entry.source)) continue
    const { window, start, source, keys } = read.entry
    for (const key of keys) if (!held.has(cellKey(window, key, start, source))) dropped.push({ window, key, start, source })
  }
  return dropped
}

/** A meta value written for a replica, and the Yjs client (one session of one replica) that wrote it. */
export interface MetaWrite {
  readonly value: unknown
  readonly client: number
}

/**
 * The meta values transaction `tr` wrote for `replicaId`, with their writers: the ones it
 * overwrote in `tr` (concurrent writes of one key: Yjs keeps one, and the others are deleted in
 * the same transaction, their content still readable until the transaction's cleanup), then the
 * one the map holds. So one session's writes come in the order it made them: the one the map
 * holds is its last (a session's later write always wins over its earlier one), and the deleted
 * ones come by client and clock.
 *
 * @example
 * metaWritten(doc.getMap(META_NAME), tr, 'tab-2') // [{ value: [3, '{...older...}'], client: 5678 }, { value: [3, '{...}'], client: 1234 }]
 */
export function metaWritten(meta: Y.Map<unknown>, tr: Y.Transaction, replicaId: string): MetaWrite[] {
  const writes: MetaWrite[] = []
  const add = (item: Y.Item): void => {
    if (item.content instanceof Y.ContentAny) for (const value of item.content.getContent()) writes.push({ value, client: item.id.client })
  }
  Y.iterateDeletedStructs(tr, tr.deleteSet, (struct) => {
    if (struct instanceof Y.Item && struct.parent === meta && struct.parentSub === replicaId) add(struct)
  })
  const current = (meta as unknown as { _map: Map<string, Y.Item> })._map.get(replicaId)
  if (current !== undefined && !current.deleted) add(current)
  return writes
}
