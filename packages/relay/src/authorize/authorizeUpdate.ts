/**
 * Decides, before a Yjs (v1) update is applied, whether a connection may apply it to a room's
 * document, without mutating the document. Tidemark's layout (@tidemark/yjs):
 *
 *   Y.Map   'tidemark:meta'                replicaId → [schema, configuration]
 *   Y.Array 'tidemark:replica:<replicaId>'  group and clock entries of that replica
 *
 * For every struct the update would integrate (clock at or past the document's state for its
 * client) and every range of its delete set that deletes a live item, the root type (and map
 * key) it belongs to is resolved the way Yjs' `Item.getMissing` does: the parent written in the
 * struct (only when it has neither origin nor right origin), else copied from the item its
 * origin (left) or right origin names, looked up in the document first and then among the
 * update's own structs. A GC neighbour makes Yjs integrate the item as GC (content dropped):
 * harmless. An origin found nowhere makes the verdict `missing`: Yjs would park the struct and
 * integrate it later, unchecked, so it is held until the connection's later messages bring what
 * it depends on.
 *
 * Entry shapes are checked with @tidemark/yjs's own readers, the ones every replica uses.
 */
import * as decoding from 'lib0/decoding'
import * as Y from 'yjs'
import { entryKind, META_NAME, readClockEntry, readGroupEntry, readMeta, REPLICA_PREFIX } from '@tidemark/yjs'
import type { SourceGrant } from '../auth/accessGrant.ts'
import { clipName, Refusal } from '../protocol/refusal.ts'
import { needsOf, type StateNeed } from './stateNeeds.ts'
import { type DecodedUpdate, findIn, type Place, placeOfStored, type StoredStruct, UpdatePlaces } from './updatePlaces.ts'

export type { StateNeed } from './stateNeeds.ts'

/**
 * What a device connection may write, from its token's claims.
 *
 * @example
 * const grant: WriteGrant = { replicas: new Set(['d07']), sources: new Set(['d07-temp']) }
 */
export interface WriteGrant {
  /** Replica ids whose log array and meta entry it may write. */
  readonly replicas: ReadonlySet<string>
  /** Sources whose groups and clocks it may write, and whose live entries it may delete in any log (a `Set`, or a `SourceGrant` of names and prefixes). */
  readonly sources: ReadonlySet<string> | SourceGrant
}

/**
 * The verdict on one update. `missing`: it depends on structs the document does not have yet
 * (an earlier update of the same client that has not arrived, or was lost). `collected`: clocks
 * of garbage-collected structs it brings (deleted content; the document's state moves on).
 *
 * @example
 * const verdict = authorizeUpdate(document, update, grant)
 * if (verdict.ok && verdict.inserts + verdict.deletes + verdict.collected === 0) console.log('nothing new')
 */
export type UpdateVerdict =
  | { readonly ok: true; readonly inserts: number; readonly deletes: number; readonly collected: number }
  | { readonly ok: false; readonly missing: true; readonly detail: string; readonly needs: readonly StateNeed[] }
  | { readonly ok: false; readonly missing: false; readonly refusal: Refusal }

/** A problem with a place: a refusal, or `missing` when it cannot be placed yet. */
type PlaceProblem = Refusal | 'missing' | null

function unplaced(place: Exclude<Place, { root: string }>, struct: Y.Item): PlaceProblem {
  if (place === 'gc') return null
  if (place === 'nested') return new Refusal('nested-type')
  if (place === 'cycle') return new Refusal('malformed-update', `origin cycle at ${struct.id.client}:${struct.id.clock}`)
  return 'missing'
}

/** The replica whose meta entry or log a place is, or a refusal when the place is outside the schema. */
function ownerOfPlace(place: { readonly root: string; readonly key: string | null }): { readonly replica: string; readonly meta: boolean } | Refusal {
  if (place.root === META_NAME) {
    if (place.key === null) return new Refusal('malformed-entry', `${META_NAME} holds only replica keys`)
    return { replica: place.key, meta: true }
  }
  if (place.root.startsWith(REPLICA_PREFIX)) {
    const replica = place.root.slice(REPLICA_PREFIX.length)
    if (place.key !== null) return new Refusal('malformed-entry', `the log of ${clipName(replica)} is an array, not a map`)
    return { replica, meta: false }
  }
  return new Refusal('unknown-root', clipName(place.root))
}

function contentProblem(content: Y.Item['content'], where: string): Refusal {
  if (content instanceof Y.ContentType) return new Refusal('nested-type')
  return new Refusal('malformed-entry', `${content.constructor.name} in ${where}`)
}

/** Why `entry` may not be written into `replica`'s log by this grant, or null. */
function entryProblem(entry: unknown, replica: string, grant: WriteGrant): Refusal | null {
  const kind = entryKind(entry)
  if (kind === 'group') {
    const group = readGroupEntry(entry)
    if (typeof group === 'string') return new Refusal('malformed-entry', group)
    return grant.sources.has(group.source) ? null : new Refusal('foreign-source', clipName(group.source))
  }
  if (kind === 'clock') {
    const clock = readClockEntry(entry)
    if (typeof clock === 'string') return new Refusal('malformed-entry', clock)
    if (!grant.sources.has(clock.source)) return new Refusal('foreign-source', clipName(clock.source))
    // A clock names its writer; writing one for another replica impersonates it.
    return clock.writer === replica ? null : new Refusal('foreign-replica', clipName(clock.writer))
  }
  return new Refusal('malformed-entry', `not a group or clock entry in the log of ${clipName(replica)}`)
}

/** Why this grant may not insert `item` (from `offset` on: the document may hold its start) at `place`. */
function insertProblem(item: Y.Item, place: Place, grant: WriteGrant, offset: number): PlaceProblem {
  if (typeof place === 'string') return unplaced(place, item)
  const owner = ownerOfPlace(place)
  if (owner instanceof Refusal) return owner
  if (!grant.replicas.has(owner.replica)) return new Refusal(owner.meta ? 'foreign-meta' : 'foreign-replica', clipName(owner.replica))
  const content = item.content
  if (content instanceof Y.ContentDeleted) return null
  const where = owner.meta ? `the meta entry of ${clipName(owner.replica)}` : `the log of ${clipName(owner.replica)}`
  if (!(content instanceof Y.ContentAny)) return contentProblem(content, where)
  const values = offset === 0 ? content.arr : content.arr.slice(offset)
  for (const value of values) {
    if (owner.meta) {
      if (readMeta(value) === null) return new Refusal('malformed-entry', `malformed meta value for ${clipName(owner.replica)}`)
      continue
    }
    const problem = entryProblem(value, owner.replica, grant)
    if (problem !== null) return problem
  }
  return null
}

/** The source of a group or clock entry, or undefined. */
function sourceOf(entry: unknown): unknown {
  const kind = entryKind(entry)
  if (kind === 'group') return (entry as unknown[])[3]
  if (kind === 'clock') return (entry as unknown[])[1]
  return undefined
}

/**
 * Why this grant may not delete `item`'s part `from..to` at `place`. A replica that retires a
 * cell deletes its entries in every log (bindDoc), so deleting live entries of the grant's own
 * sources in another replica's log is allowed.
 */
function deleteProblem(item: Y.Item, place: Place, grant: WriteGrant, from: number, to: number): PlaceProblem {
  if (typeof place === 'string') return unplaced(place, item)
  const owner = ownerOfPlace(place)
  if (owner instanceof Refusal) return owner
  if (grant.replicas.has(owner.replica)) return null
  if (!owner.meta && item.content instanceof Y.ContentAny) {
    const entries = item.content.arr.slice(from, to)
    if (entries.every((entry) => grant.sources.has(sourceOf(entry) as string))) return null
  }
  return new Refusal(owner.meta ? 'foreign-meta' : 'foreign-replica', clipName(owner.replica))
}

const clientOwners = new WeakMap<Y.Doc, Map<number, string | null>>()

/**
 * The replica a Yjs client id has written for in `doc` (the owner of its first placeable item),
 * or null. A client id is one session of one replica: new items under a client id another
 * replica owns would make that replica's later items look like duplicates, and Yjs drop them.
 *
 * @example
 * writerOfClient(document, 1234567) // 'd07': client 1234567 wrote d07's log
 */
export function writerOfClient(doc: Y.Doc, client: number): string | null {
  let owners = clientOwners.get(doc)
  if (owners === undefined) {
    owners = new Map()
    clientOwners.set(doc, owners)
  }
  const known = owners.get(client)
  if (known !== undefined && known !== null) return known
  const structs = doc.store.clients.get(client)
  // A client id that wrote nothing is not remembered: ids come from clients (awareness names any).
  if (structs === undefined) return null
  let owner: string | null = null
  for (let i = 0; i < structs.length && i < 64; i++) {
    const place = placeOfStored(doc, structs[i] as StoredStruct)
    if (typeof place === 'string') continue
    const placed = ownerOfPlace(place)
    if (!(placed instanceof Refusal)) {
      owner = placed.replica
      break
    }
  }
  owners.set(client, owner)
  return owner
}

function refused(refusal: Refusal): UpdateVerdict {
  return { ok: false, missing: false, refusal }
}

/**
 * Decides whether a connection holding `grant` may apply `update` (Yjs v1) to `doc`. Does not
 * mutate `doc` and throws nothing: undecodable bytes are refused. `presentElsewhere` says whether
 * a client id is another live connection's presence: a client id that wrote nothing here yet is
 * then refused as `client-id-squatting` (a device that learned another's client id from its
 * presence would otherwise write first under it, and the owner's own writes would read as already
 * applied and be dropped).
 *
 * @example
 * const verdict = authorizeUpdate(document, update, { replicas: new Set(['d07']), sources: new Set(['d07-temp']) })
 * if (!verdict.ok && !verdict.missing) console.log(verdict.refusal.text) // e.g. 'foreign-source d08-temp'
 */
export function authorizeUpdate(doc: Y.Doc, update: Uint8Array, grant: WriteGrant, presentElsewhere?: (client: number) => boolean): UpdateVerdict {
  let decoded: DecodedUpdate
  try {
    decoded = Y.decodeUpdate(update) as unknown as DecodedUpdate
  } catch (error) {
    return refused(new Refusal('malformed-update', `undecodable: ${error instanceof Error ? error.message : String(error)}`))
  }
  const places = new UpdatePlaces(doc, decoded.structs)
  // Yjs integrates only the last of several struct sections of one client, where the decoded
  // structs hold them all (and `findIn` could then find a struct Yjs drops in place of the one
  // it integrates). No Yjs encoder writes a client twice, or a section without structs.
  const sections = decoding.readVarUint(decoding.createDecoder(update))
  if (sections !== places.byClient.size) return refused(new Refusal('malformed-update', `${sections} struct sections for ${places.byClient.size} clients`))
  const store = doc.store
  const missing = (detail: string): UpdateVerdict => ({ ok: false, missing: true, detail, needs: needsOf(places, decoded.ds) })
  let inserts = 0
  let deletes = 0
  /** Clocks of garbage-collected structs new to the document: nothing inserted, yet its state moves on. */
  let collected = 0
  /** Why some structs would be parked by Yjs (after a Skip), or null. */
  let parked: string | null = null

  for (const [client, structs] of places.byClient) {
    const state = Y.getState(store, client)
    let fresh = false
    // Yjs integrates a client's structs only contiguously from its state; past a gap it parks them.
    let next = state
    let skipped: Y.Skip | null = null
    for (const struct of structs) {
      if (struct.id.clock + struct.length <= state) continue
      if (struct instanceof Y.Skip) {
        skipped = struct
        next = Number.POSITIVE_INFINITY
        continue
      }
      // Past a Skip the document does not cover, Yjs parks the structs (and the delete ranges over
      // them) until another update fills the gap, then integrates them unchecked: they are checked
      // now (a foreign one is refused at once), and the update is held, not applied.
      if (skipped !== null) parked ??= `client ${client} skips ${skipped.id.clock}..${skipped.id.clock + skipped.length}, which the document does not have (up to ${state})`
      if (struct.id.clock > next) return missing(`client ${client} continues at ${struct.id.clock}, the document has up to ${state}`)
      next = struct.id.clock + struct.length
      fresh = true
      const offset = Math.max(0, state - struct.id.clock)
      if (!(struct instanceof Y.Item)) {
        collected += struct.length - offset
        continue
      }
      const problem = insertProblem(struct, places.placeOf(struct), grant, offset)
      if (problem === 'missing') return missing(`origin of ${client}:${struct.id.clock} not found`)
      if (problem !== null) return refused(problem)
      inserts += struct.length - offset
    }
    if (fresh) {
      const owner = state > 0 ? writerOfClient(doc, client) : null
      if (owner !== null && !grant.replicas.has(owner)) return refused(new Refusal('client-id-squatting', `client ${client} writes for ${clipName(owner)}`))
      if (owner === null && presentElsewhere?.(client) === true) return refused(new Refusal('client-id-squatting', `client ${client} is another connection's presence`))
    }
  }

  for (const [client, ranges] of decoded.ds.clients) {
    const state = Y.getState(store, client)
    const stored = store.clients.get(client) as StoredStruct[] | undefined
    const own = places.byClient.get(client)
    let previousEnd = 0
    for (const { clock, len } of ranges) {
      const end = clock + len
      // Yjs writes a client's delete ranges sorted and merged; overlapping ones would make every
      // range walk the same structs again (Yjs' own apply too).
      if (clock < previousEnd) return refused(new Refusal('malformed-update', `delete ranges of client ${client} overlap or are out of order at ${clock}`))
      previousEnd = end
      // The part the document holds: only live items change.
      if (stored !== undefined && clock < state) {
        for (let i = Y.findIndexSS(stored, clock); i < stored.length; i++) {
          const struct = stored[i] as StoredStruct
          if (struct.id.clock >= end) break
          if (!(struct instanceof Y.Item) || struct.deleted) continue
          const from = Math.max(clock, struct.id.clock) - struct.id.clock
          const to = Math.min(end, struct.id.clock + struct.length) - struct.id.clock
          const problem = deleteProblem(struct, placeOfStored(doc, struct), grant, from, to)
          if (problem === 'missing') return missing(`deleted item ${client}:${struct.id.clock} cannot be placed`)
          if (problem !== null) return refused(problem)
          deletes += to - from
        }
      }
      // The part past the document's state must be structs of this very update.
      for (let c = Math.max(clock, state); c < end; ) {
        const struct = findIn(own, c)
        if (struct === undefined || struct instanceof Y.Skip) return missing(`delete of unknown range ${client}:${c}`)
        if (struct instanceof Y.Item) {
          const problem = deleteProblem(struct, places.placeOf(struct), grant, c - struct.id.clock, Math.min(end, struct.id.clock + struct.length) - struct.id.clock)
          if (problem === 'missing') return missing(`deleted item ${client}:${struct.id.clock} cannot be placed`)
          if (problem !== null) return refused(problem)
        }
        c = struct.id.clock + struct.length
      }
    }
  }
  return parked === null ? { ok: true, inserts, deletes, collected } : missing(parked)
}
