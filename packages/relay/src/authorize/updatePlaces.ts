/**
 * Where the structs of a Yjs (v1) update land in a document, resolved the way Yjs'
 * `Item.getMissing` does: the parent written in the struct, else the one of the item its origin
 * or right origin names, looked up in the document first and then among the update's own structs.
 */
import * as Y from 'yjs'

/** A struct of an update as Yjs decodes it. */
export type Struct = Y.Item | Y.GC | Y.Skip
/** A struct a document holds. */
export type StoredStruct = Y.Item | Y.GC
/** Where a struct lives: a root type and map key, or it integrates as GC, or it cannot be placed. */
export type Place = { readonly root: string; readonly key: string | null } | 'gc' | 'nested' | 'missing' | 'cycle'

/** An update as `Y.decodeUpdate` gives it: its structs and its delete set. */
export interface DecodedUpdate {
  readonly structs: Struct[]
  readonly ds: { readonly clients: Map<number, { readonly clock: number; readonly len: number }[]> }
}

const rootNames = new WeakMap<Y.Doc, Map<unknown, string>>()

/** Name of a root type of `doc`, cached: `doc.share` is scanned only when a type is new. */
function rootName(doc: Y.Doc, type: unknown): string | undefined {
  let names = rootNames.get(doc)
  if (names === undefined) {
    names = new Map()
    rootNames.set(doc, names)
  }
  let name = names.get(type)
  if (name === undefined) {
    names.clear()
    for (const [key, value] of doc.share) names.set(value, key)
    name = names.get(type)
  }
  return name
}

/**
 * Where a struct the document holds lives.
 *
 * @example
 * placeOfStored(doc, item) // { root: 'tidemark:replica:d07', key: null }
 */
export function placeOfStored(doc: Y.Doc, struct: StoredStruct): Place {
  if (!(struct instanceof Y.Item)) return 'gc'
  const parent = struct.parent as Y.AbstractType<unknown> | null
  if (parent === null) return 'gc'
  if (parent._item !== null) return 'nested'
  const root = rootName(doc, parent)
  return root === undefined ? 'missing' : { root, key: struct.parentSub }
}

/**
 * The struct of `structs` (sorted by clock) that holds `clock`.
 *
 * @example
 * findIn(places.byClient.get(client), 12) // the struct covering clock 12, or undefined
 */
export function findIn(structs: readonly Struct[] | undefined, clock: number): Struct | undefined {
  if (structs === undefined) return undefined
  let lo = 0
  let hi = structs.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const struct = structs[mid] as Struct
    if (struct.id.clock > clock) hi = mid - 1
    else if (clock >= struct.id.clock + struct.length) lo = mid + 1
    else return struct
  }
  return undefined
}

/**
 * An update's structs by client, placed against a document.
 *
 * @example
 * const places = new UpdatePlaces(doc, decoded.structs)
 * places.placeOf(struct) // { root: 'tidemark:meta', key: 'd07' }, 'gc', 'nested', 'missing' or 'cycle'
 */
export class UpdatePlaces {
  readonly byClient = new Map<number, Struct[]>()
  readonly #memo = new Map<Struct, Place>()
  readonly #doc: Y.Doc

  constructor(doc: Y.Doc, structs: readonly Struct[]) {
    this.#doc = doc
    for (const struct of structs) {
      let list = this.byClient.get(struct.id.client)
      if (list === undefined) {
        list = []
        this.byClient.set(struct.id.client, list)
      }
      list.push(struct)
    }
  }

  /** The struct holding `id`: the document's when it has that clock, else the update's. */
  #lookup(id: Y.ID): { readonly struct: Struct; readonly stored: boolean } | undefined {
    const store = this.#doc.store
    if (id.clock < Y.getState(store, id.client)) {
      const structs = store.clients.get(id.client) as StoredStruct[]
      return { struct: structs[Y.findIndexSS(structs, id.clock)] as StoredStruct, stored: true }
    }
    const struct = findIn(this.byClient.get(id.client), id.clock)
    return struct === undefined || struct instanceof Y.Skip ? undefined : { struct, stored: false }
  }

  #placeOfRef(id: Y.ID): Place {
    const found = this.#lookup(id)
    if (found === undefined) return 'missing'
    if (found.stored) return placeOfStored(this.#doc, found.struct as StoredStruct)
    return this.placeOf(found.struct)
  }

  /** Mirrors `Item.getMissing`: an explicit parent, else the left (origin) or right item's. */
  placeOf(struct: Struct): Place {
    if (!(struct instanceof Y.Item)) return 'gc'
    const known = this.#memo.get(struct)
    if (known !== undefined) return known
    this.#memo.set(struct, 'cycle')
    const left = struct.origin === null ? null : this.#placeOfRef(struct.origin)
    const right = struct.rightOrigin === null ? null : this.#placeOfRef(struct.rightOrigin)
    let place: Place
    if (left === 'cycle' || right === 'cycle') place = 'cycle'
    else if (left === 'missing' || right === 'missing') place = 'missing'
    else if (left === 'gc' || right === 'gc') place = 'gc'
    else if (left === 'nested' || right === 'nested') place = 'nested'
    else if (struct.parent !== null) {
      // Written only when the item has neither origin nor right origin.
      place = typeof struct.parent === 'string' ? { root: struct.parent, key: struct.parentSub } : 'nested'
    } else if (left !== null) place = left
    else if (right !== null) place = right
    else place = 'missing'
    this.#memo.set(struct, place)
    return place
  }
}
