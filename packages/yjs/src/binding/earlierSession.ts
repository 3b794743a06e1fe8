/**
 * Earlier sessions of replicas: what this replica's own log brings from an earlier session of it
 * (the cells it held that the engine has dropped since, retired at bind), the meta entries a
 * remote transaction wrote for a replica, the sessions of each replica under another
 * configuration, whose entries are not this binding's to merge, and the entries of this session
 * that another deleted.
 */
import type { CellAddress, CellEntry } from '@tidemark/engine'
import { GroupIndex } from '@tidemark/engine/adapter'
import * as Y from 'yjs'
import type { ReadEntry } from './replicaEntries.ts'

/**
 * The cells of `sources` that `previous` (a log as it was read) holds and `cells` (the engine's
 * state) does not. Addresses are looked up in nested maps, with no text made per cell: a JSON key
 * per cell (its start, a time like 1.7e12, turned into text) cost about a microsecond each.
 *
 * @example
 * const expired = droppedSince(ownLog.reread(), state.cells, new Set(['d1']))
 */
export function droppedSince(previous: readonly ReadEntry[], cells: readonly CellEntry[], sources: ReadonlySet<string>): CellAddress[] {
  const dropped: CellAddress[] = []
  if (previous.length === 0) return dropped
  const held = new GroupIndex<Set<string>>()
  for (const { address: a } of cells) {
    let keys = held.get(a.window, a.source, a.start)
    if (keys === undefined) {
      keys = new Set()
      held.set(a.window, a.source, a.start, keys)
    }
    keys.add(a.key)
  }
  for (const read of previous) {
    if (read.kind !== 'group' || !sources.has(read.entry.source)) continue
    const { window, start, source, keys } = read.entry
    const kept = held.get(window, source, start)
    for (const key of keys) if (kept?.has(key) !== true) dropped.push({ window, key, start, source })
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
 * entry Yjs client `client` (this session) wrote.
 *
 * @example
 * if (ownMeta.contestedLately && lostEntries(batch.removed.get(ownLog), doc.clientID)) republishWholeState()
 */
export function lostEntries(removed: readonly Y.Item[] | undefined, client: number): boolean {
  return removed?.some((item) => item.id.client === client) === true
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
