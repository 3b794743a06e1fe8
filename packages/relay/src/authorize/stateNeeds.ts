/**
 * What a `missing` update waits for: the state each Yjs client must reach in the document before
 * the verdict on it can change, read from the update alone.
 */
import * as Y from 'yjs'
import { type DecodedUpdate, findIn, type Struct, type UpdatePlaces } from './updatePlaces.ts'

/**
 * A Yjs client's state (its next clock) a document must reach before a `missing` update can be
 * decided: the verdict on the update cannot change while one of its needs is unmet.
 *
 * @example
 * const ready = verdict.needs.every(({ client, clock }) => Y.getState(doc.store, client) >= clock)
 */
export interface StateNeed {
  readonly client: number
  readonly clock: number
}

/**
 * Every state the document must reach for `update` to be placed whole, read from the update alone:
 * the start of each client's structs (but a Skip), the end of each Skip that structs follow, each
 * origin, right origin and parent id the update does not hold, and each delete range's clocks it
 * does not hold. With all of them met the
 * verdict is not `missing` (structs below a client's state are the document's, the rest the update's).
 *
 * @example
 * const needs = needsOf(new UpdatePlaces(doc, decoded.structs), decoded.ds)
 */
export function needsOf(places: UpdatePlaces, ds: DecodedUpdate['ds']): StateNeed[] {
  const needs = new Map<number, number>()
  const need = (client: number, clock: number): void => {
    if (clock > (needs.get(client) ?? 0)) needs.set(client, clock)
  }
  const held = (id: Y.ID): boolean => {
    const struct = findIn(places.byClient.get(id.client), id.clock)
    return struct !== undefined && !(struct instanceof Y.Skip)
  }
  for (const [client, structs] of places.byClient) {
    const first = structs[0] as Struct
    if (!(first instanceof Y.Skip)) need(client, first.id.clock)
    for (let i = 0; i < structs.length; i++) {
      const struct = structs[i] as Struct
      // Structs after a Skip wait in Yjs until the document has what it skips.
      if (struct instanceof Y.Skip && i + 1 < structs.length) need(client, struct.id.clock + struct.length)
      if (!(struct instanceof Y.Item)) continue
      const parent = struct.parent instanceof Y.ID ? struct.parent : null
      for (const id of [struct.origin, struct.rightOrigin, parent]) if (id !== null && !held(id)) need(id.client, id.clock + 1)
    }
  }
  for (const [client, ranges] of ds.clients) {
    const own = places.byClient.get(client) ?? []
    for (const { clock, len } of ranges) {
      const end = clock + len
      for (let c = clock; c < end; ) {
        const struct = findIn(own, c)
        if (struct !== undefined && !(struct instanceof Y.Skip)) {
          c = struct.id.clock + struct.length
          continue
        }
        // Not in the update from c to its next struct (or the range's end): the document's to hold.
        let next = struct === undefined ? firstAfter(own, c) : struct.id.clock + struct.length
        if (next > end) next = end
        need(client, next)
        c = next
      }
    }
  }
  return [...needs].map(([client, clock]) => ({ client, clock }))
}

/** The clock of the first struct of `structs` (sorted) starting after `clock`, or +Infinity. */
function firstAfter(structs: readonly Struct[], clock: number): number {
  let lo = 0
  let hi = structs.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if ((structs[mid] as Struct).id.clock > clock) hi = mid
    else lo = mid + 1
  }
  return lo < structs.length ? (structs[lo] as Struct).id.clock : Number.POSITIVE_INFINITY
}
