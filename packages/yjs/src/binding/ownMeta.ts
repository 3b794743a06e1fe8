/**
 * A session's own replica's meta entry: which values are its own (its schema and
 * configuration), writing it back when a peer overwrote or deleted it, and when to give the
 * replica up to another live session of the same replica id.
 */
import type * as Y from 'yjs'
import { ConfigurationMismatchError } from '../schema/configurationMismatchError.ts'
import { DOC_SCHEMA, metaValue, readMeta } from '../schema/docEntry.ts'
import { metaItem } from './earlierSession.ts'

/**
 * Two live sessions of one replica id under different configurations would write its meta entry
 * back at each other without end. A meta entry of another configuration written over one of this
 * session's repairs, knowing it (the repair is its item's origin), is another live session's
 * answer; at the second, this session gives the replica up. So the session that repaired first
 * gives up, and one that comes once and goes (a stale tab that wakes) answers once: it never
 * takes the replica from a live session.
 *
 * @example
 * const ownMeta = new OwnMeta(doc, meta, 'a', port.configuration, origin)
 * ownMeta.holds(meta.get('a')) // true while the entry is this session's
 * ownMeta.repair() // a peer overwrote it: written back
 * ownMeta.answered() // a ConfigurationMismatchError once another live session answered twice, else null
 */
export class OwnMeta {
  readonly #doc: Y.Doc
  readonly #meta: Y.Map<unknown>
  readonly #replicaId: string
  readonly #configuration: string
  readonly #origin: unknown
  /** The clocks of the repairs not answered yet. */
  readonly #repairs = new Set<number>()
  #answers = 0

  /** `origin`: the origin of this session's transactions. */
  constructor(doc: Y.Doc, meta: Y.Map<unknown>, replicaId: string, configuration: string, origin: unknown) {
    this.#doc = doc
    this.#meta = meta
    this.#replicaId = replicaId
    this.#configuration = configuration
    this.#origin = origin
  }

  /** Whether a meta entry's value reads as this session's schema and configuration. */
  holds(value: unknown): boolean {
    const meta = readMeta(value)
    return meta !== null && meta.schema === DOC_SCHEMA && meta.configuration === this.#configuration
  }

  /** Writes this session's meta entry (in the current transaction, if any). */
  write(): void {
    this.#meta.set(this.#replicaId, metaValue(this.#configuration))
  }

  /** A peer overwrote or deleted the entry: writes it back, and remembers the repair. */
  repair(): void {
    if (this.holds(this.#meta.get(this.#replicaId))) return
    this.#doc.transact(() => this.write(), this.#origin)
    const item = metaItem(this.#meta, this.#replicaId)
    if (item !== undefined) this.#repairs.add(item.id.clock)
  }

  /** Why this session gives its replica up, when the entry is another live session's second answer to its repairs; null otherwise. */
  answered(): ConfigurationMismatchError | null {
    const item = metaItem(this.#meta, this.#replicaId)
    const origin = item?.origin
    if (item === undefined || item.deleted || origin?.client !== this.#doc.clientID) return null
    const value = item.content.getContent()[0]
    if (this.holds(value) || !this.#repairs.delete(origin.clock) || ++this.#answers < 2) return null
    const received = readMeta(value)?.configuration ?? null
    return new ConfigurationMismatchError(this.#replicaId, this.#configuration, received, 'another live session of this replica id took it over: this one writes no more')
  }
}
