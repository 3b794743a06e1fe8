/**
 * A session's own replica's meta entry: which values are its own (its schema and
 * configuration), writing it back when a peer overwrote or deleted it, and when to give the
 * replica up to another live session of the same replica id.
 */
import type { ReplicaPort } from '@tidemark/engine'
import type * as Y from 'yjs'
import { ConfigurationMismatchError } from '../schema/configurationMismatchError.ts'
import { DOC_SCHEMA, metaValue, readMeta } from '../schema/docEntry.ts'
import { metaItem } from './earlierSession.ts'

/** How soon after one of this session's repairs another session's answer shows that session live (a round trip over a slow link included), ms. */
export const ANSWER_WINDOW_MS = 30_000

/** Engines (by their replica port) that gave their replica up: none of their bindings writes again. */
const gaveUp = new WeakSet<object>()

/**
 * Two live sessions of one replica id under different configurations would write its meta entry
 * back at each other without end. A meta entry of another configuration written over one of this
 * session's repairs, knowing it (the repair is its item's origin), within `ANSWER_WINDOW_MS` (30 s) of
 * that repair, is another live session's answer; at the second answer in a row, this session's
 * engine gives the replica up, in every doc it is bound to. So the session that repaired first
 * gives up. An answer that comes later than that (a stale tab that wakes, syncs and sleeps again)
 * starts the count over: such a tab never takes the replica from a live session.
 *
 * @example
 * const ownMeta = new OwnMeta(doc, meta, engine.replica, origin, Date.now)
 * ownMeta.holds(meta.get(engine.replica.replicaId)) // true while the entry is this session's
 * ownMeta.repair() // a peer overwrote it: written back
 * ownMeta.answered() // a ConfigurationMismatchError once another live session answered twice, else null
 */
export class OwnMeta {
  readonly #doc: Y.Doc
  readonly #meta: Y.Map<unknown>
  readonly #port: Pick<ReplicaPort, 'replicaId' | 'configuration'>
  readonly #origin: unknown
  readonly #now: () => number
  /** When each repair not answered yet was written, by its item's clock. */
  readonly #repairs = new Map<number, number>()
  #answers = 0
  /** When a meta entry of another configuration for this replica last came (-Infinity: never). */
  #contestedAt = Number.NEGATIVE_INFINITY

  /** `origin`: the origin of this session's transactions; `now`: its clock. */
  constructor(doc: Y.Doc, meta: Y.Map<unknown>, port: Pick<ReplicaPort, 'replicaId' | 'configuration'>, origin: unknown, now: () => number) {
    this.#doc = doc
    this.#meta = meta
    this.#port = port
    this.#origin = origin
    this.#now = now
  }

  /** Whether this engine gave its replica up (here or through another doc it is bound to). */
  get gaveUp(): boolean {
    return gaveUp.has(this.#port)
  }

  /** A meta entry of another configuration for this replica came just now. */
  contested(): void {
    this.#contestedAt = this.#now()
  }

  /**
   * Whether a session of another configuration wrote this replica's meta entry within
   * `ANSWER_WINDOW_MS`: entries of this session deleted now are its doing (it takes them for an
   * earlier session's), even in an update without a meta entry.
   */
  get contestedLately(): boolean {
    const since = this.#now() - this.#contestedAt
    return since >= 0 && since <= ANSWER_WINDOW_MS
  }

  /** Whether a meta entry's value reads as this session's schema and configuration. */
  holds(value: unknown): boolean {
    const meta = readMeta(value)
    return meta !== null && meta.schema === DOC_SCHEMA && meta.configuration === this.#port.configuration
  }

  /** Writes this session's meta entry (in the current transaction, if any). */
  write(): void {
    this.#meta.set(this.#port.replicaId, metaValue(this.#port.configuration))
  }

  /** A peer overwrote or deleted the entry: writes it back, and remembers when. */
  repair(): void {
    if (this.holds(this.#meta.get(this.#port.replicaId))) return
    this.#doc.transact(() => this.write(), this.#origin)
    const item = metaItem(this.#meta, this.#port.replicaId)
    if (item === undefined) return
    const now = this.#now()
    // Repairs no one answered in time never count again: a stale tab waking for days keeps none.
    for (const [clock, at] of this.#repairs) if (now - at > ANSWER_WINDOW_MS) this.#repairs.delete(clock)
    this.#repairs.set(item.id.clock, now)
  }

  /** Why this engine gives its replica up, when the entry is another live session's second answer in a row to its repairs; null otherwise. */
  answered(): ConfigurationMismatchError | null {
    const item = metaItem(this.#meta, this.#port.replicaId)
    const origin = item?.origin
    if (item === undefined || item.deleted || origin?.client !== this.#doc.clientID) return null
    const value = item.content.getContent()[0]
    if (this.holds(value)) return null
    const repairedAt = this.#repairs.get(origin.clock)
    if (repairedAt === undefined) {
      // Over a write of this session that is no repair in time (its first, or one let go as unanswered): no answer, and the count starts over.
      this.#answers = 0
      return null
    }
    this.#repairs.delete(origin.clock)
    // A late answer is a session that woke, not one that is live: the count starts over (and so
    // does an answer from before its repair, the clock set back).
    const elapsed = this.#now() - repairedAt
    this.#answers = elapsed >= 0 && elapsed <= ANSWER_WINDOW_MS ? this.#answers + 1 : 0
    if (this.#answers < 2) return null
    gaveUp.add(this.#port)
    const received = readMeta(value)?.configuration ?? null
    return new ConfigurationMismatchError(this.#port.replicaId, this.#port.configuration, received, 'another live session of this replica id took it over: this one writes no more')
  }
}
