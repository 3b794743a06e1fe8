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

/**
 * The meta values transaction `tr` wrote for `replicaId`: the one the map holds and the ones it
 * overwrote in `tr` (concurrent writes of one key: Yjs keeps one, and the others are deleted in
 * the same transaction, their content still readable until the transaction's cleanup).
 *
 * @example
 * metaWritten(doc.getMap(META_NAME), tr, 'tab-2') // [[3, '{...}'], [3, '{...older...}']]
 */
export function metaWritten(meta: Y.Map<unknown>, tr: Y.Transaction, replicaId: string): unknown[] {
  const values: unknown[] = [meta.get(replicaId)]
  Y.iterateDeletedStructs(tr, tr.deleteSet, (struct) => {
    if (struct instanceof Y.Item && struct.parent === meta && struct.parentSub === replicaId && struct.content instanceof Y.ContentAny) values.push(...struct.content.getContent())
  })
  return values
}
