/**
 * Earlier sessions of replicas: what this replica's own log brings from an earlier session of it
 * (the cells it holds as they are, not written again at bind, and those the engine has dropped
 * since, retired at bind), the meta entries a
 * remote transaction wrote for a replica, the sessions of each replica under another
 * configuration, whose entries are not this binding's to merge, and the entries of this session
 * that another deleted.
 */
import { type CellAddress, type CellEntry, type CellGroup, compareCells, groupCell, sameBytes } from '@tidemark/engine'
import { GroupIndex } from '@tidemark/engine/adapter'
import * as Y from 'yjs'
import type { ReadEntry } from './replicaEntries.ts'

/** What a replica's state at bind makes of what its log held then (`sinceEarlierSession`). */
export interface EarlierSessionDiff {
  /** The engine's cells the log does not already hold as they are: the ones to write. */
  readonly changed: readonly CellEntry[]
  /** The cells of the given sources the log holds and the engine does not: the ones to retire. */
  readonly dropped: readonly CellAddress[]
}

/**
 * What an earlier session of this replica left in its log (`previous`, as read at bind), against
 * the engine's state (`cells`): the cells to write, leaving out those the log holds as they are
 * (same numbers, same aggregate states), so a reload or a takeover writes what changed while no
 * doc was bound and not its whole state again; and the cells of `sources` to retire, which the
 * log holds and the engine left. Where a group has several entries, the newest cell of each key
 * counts. Addresses are looked up in nested maps, no text made per cell.
 *
 * @example
 * const { changed, dropped } = sinceEarlierSession(ownLog.reread(), state.cells, new Set(['d1']))
 */
export function sinceEarlierSession(previous: readonly ReadEntry[], cells: readonly CellEntry[], sources: ReadonlySet<string>): EarlierSessionDiff {
  if (previous.length === 0) return { changed: cells, dropped: [] }
  // The newest logged cell of each address, by slot: its group and row (no object per cell).
  const slots = new GroupIndex<Map<string, number>>()
  const groups: CellGroup[] = []
  const rows: number[] = []
  for (const read of previous) {
    if (read.kind !== 'group') continue
    const group = read.entry
    let byKey = slots.get(group.window, group.source, group.start)
    if (byKey === undefined) {
      byKey = new Map()
      slots.set(group.window, group.source, group.start, byKey)
    }
    for (let i = 0; i < group.keys.length; i++) {
      const key = group.keys[i] as string
      const slot = byKey.get(key)
      if (slot === undefined) {
        byKey.set(key, groups.length)
        groups.push(group)
        rows.push(i)
      } else if (compareCells(groupCell(group, i), groupCell(groups[slot] as CellGroup, rows[slot] as number)) > 0) {
        groups[slot] = group
        rows[slot] = i
      }
    }
  }
  const held = new Uint8Array(groups.length)
  const changed: CellEntry[] = []
  for (const entry of cells) {
    const a = entry.address
    const slot = slots.get(a.window, a.source, a.start)?.get(a.key)
    if (slot === undefined) {
      changed.push(entry)
      continue
    }
    held[slot] = 1
    if (!loggedAsIs(entry, groups[slot] as CellGroup, rows[slot] as number)) changed.push(entry)
  }
  const dropped: CellAddress[] = []
  for (let slot = 0; slot < groups.length; slot++) {
    const group = groups[slot] as CellGroup
    if (held[slot] === 0 && sources.has(group.source)) dropped.push({ window: group.window, key: group.keys[rows[slot] as number] as string, start: group.start, source: group.source })
  }
  return { changed, dropped }
}

/** Whether the log holds `entry`'s cell as it is (row `i` of `group`): its six numbers, and its aggregate states byte for byte. */
function loggedAsIs(entry: CellEntry, group: CellGroup, i: number): boolean {
  if (compareCells(entry.cell, groupCell(group, i)) !== 0) return false
  const ours = entry.aggregates ?? []
  const logged = group.aggregates?.[i] ?? []
  return ours.length === logged.length && ours.every((state, k) => sameBytes(state, logged[k] as Uint8Array))
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
  const current = metaItem(meta, replicaId)
  if (current !== undefined && !current.deleted) add(current)
  return writes
}

/** The item of `replicaId`'s meta entry in `meta` (deleted when the entry is), the one Yjs shows. */
export function metaItem(meta: Y.Map<unknown>, replicaId: string): Y.Item | undefined {
  return (meta as unknown as { _map: Map<string, Y.Item> })._map.get(replicaId)
}

/**
 * Whether `removed` (items a remote transaction deleted from this session's own log) holds an
 * entry that carries this session's state: one Yjs client `client` (this session) wrote, or one
 * of the earlier sessions in `adopted`, whose entries first contact left in place of writing
 * their cells again.
 *
 * @example
 * if (ownMeta.contestedLately && lostEntries(batch.removed.get(ownLog), doc.clientID, adopted)) republishWholeState()
 */
export function lostEntries(removed: readonly Y.Item[] | undefined, client: number, adopted: ReadonlySet<number>): boolean {
  return removed?.some((item) => item.id.client === client || adopted.has(item.id.client)) === true
}

/**
 * By replica: the Yjs clients (sessions) seen writing a meta entry of another configuration for
 * it, or writing its log while its meta entry was of another configuration (a reload of that
 * session writes no meta entry), and none of this one since. Their entries in its log are not of
 * this configuration: never merged (a replica that came back reconfigured republishes its state,
 * and deletes its earlier sessions' entries only once it has them: a peer can see its new meta
 * entry first). Never the binding's own client.
 *
 * @example
 * const foreign = new ForeignSessions(doc)
 * foreign.add('tab-2', [5678])
 * log.reread(foreign.of('tab-2')) // its entries but those of client 5678
 */
export class ForeignSessions {
  readonly #byReplica = new Map<string, Set<number>>()
  readonly #doc: { readonly clientID: number }

  /** `doc`: the binding's doc, whose own client is never set apart (read as it is: Yjs may change it). */
  constructor(doc: { readonly clientID: number }) {
    this.#doc = doc
  }

  /** The sessions of `replicaId` whose entries are set apart (undefined: none). */
  of(replicaId: string): ReadonlySet<number> | undefined {
    return this.#byReplica.get(replicaId)
  }

  /** Notes `clients` as sessions of `replicaId` under another configuration. */
  add(replicaId: string, clients: Iterable<number>): void {
    let sessions = this.#byReplica.get(replicaId)
    for (const client of clients) {
      if (client === this.#doc.clientID) continue
      sessions ??= new Set()
      sessions.add(client)
    }
    if (sessions !== undefined) this.#byReplica.set(replicaId, sessions)
  }

  /** `client` wrote a meta entry of this configuration for `replicaId`: its entries are merged again. */
  accept(replicaId: string, client: number): void {
    this.#byReplica.get(replicaId)?.delete(client)
  }

  /** Forgets `replicaId` (it left no trace). */
  forget(replicaId: string): void {
    this.#byReplica.delete(replicaId)
  }
}
