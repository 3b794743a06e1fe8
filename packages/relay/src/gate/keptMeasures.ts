/**
 * What `joinAnswer.ts` keeps of a document's writers (Yjs clients) between weighs: each writer's
 * structs as running totals of their bytes, and the walk over them for the delete set's ranges.
 * Both are kept across changes of the document and read again only from the first struct a change
 * could have altered, so a device overwriting its recent entries has those entries read again,
 * not the writer whole.
 *
 * Which structs a transaction can alter (Yjs 13.6.33, `cleanupTransactions`): those it appended
 * (from the writer's clock before it), those its delete set names (deleted, then garbage
 * collected), those it split (the right halves, its `_mergeStructs`, and the left halves, which
 * hold the clock just before), those of a deleted type's children a garbage collection replaces
 * by GCs (the entries a map key held before its last, named nowhere else: collected from the
 * deleted types before the collection), and those merged. Every merge (`tryToMergeWithLefts`)
 * starts at a struct holding one of those clocks, or at the struct just after one (after a deleted
 * range, after a split's right half), and merges it into its left neighbours, as far
 * left as they merge: the struct it ends in then holds the clock before the earliest changed one,
 * or starts after it. So with `m` the earliest clock a transaction changed of a writer, the
 * structs before the one now holding `m - 1` are as they were, at the same indices; a measure is
 * read again from that struct on (`staleFrom`), however many transactions marked it.
 */
import * as Y from 'yjs'
import { runningBytes, varUintBytes } from './structBytes.ts'

/**
 * A writer's structs as running totals of their bytes (`runningBytes`), and the clock from whose
 * struct on a change of the document since made them stale (Infinity while they hold).
 */
interface WriterTotals {
  totals: Float64Array | null
  /** Structs the totals count, from the first. */
  counted: number
  staleFrom: number
}

/**
 * The walk over a writer's structs for the delete set's ranges (runs of deleted structs, as Yjs
 * merges them), kept at every `CHECKPOINT_SPACING`-th struct: at index `i * CHECKPOINT_SPACING`,
 * the ranges closed before it, their bytes, and the run of deleted structs it is in (its first
 * clock, its length so far; 0 when none), 4 entries from `4 * i`. A change has it walked again
 * from the last checkpoint at or before the first struct it could have altered.
 */
interface DeletionWalk {
  checkpoints: Float64Array
  /** Structs walked, from the first. */
  walked: number
  staleFrom: number
  /** The ranges of all the structs, while the walk is not stale. */
  whole: { readonly count: number; readonly bytes: number } | null
}

/** Structs between two kept states of a deletion walk: the most a change has walked again before the first struct it altered. */
const CHECKPOINT_SPACING = 16

/** What is kept of a document: each writer's totals and deletion walk, by client. */
interface KeptMeasures {
  readonly writers: Map<number, WriterTotals>
  readonly deletions: Map<number, DeletionWalk>
}

const keptMeasures = new WeakMap<Y.Doc, KeptMeasures>()

/**
 * The structs a transaction's garbage collection will replace without naming them, collected before
 * it (`collectTypeChildren`): the earliest clock of each writer.
 */
const collectedChildren = new WeakMap<Y.Transaction, Map<number, number>>()

/**
 * `client`'s structs' running totals (`runningBytes`) in `document`: each struct read once, then
 * again only from the first a change could have altered.
 *
 * @example
 * const totals = writerRunningBytes(document, client, structs)
 * if (totals !== null) clientStructsBytes(structs, client, clock, totals)
 */
export function writerRunningBytes(document: Y.Doc, client: number, structs: readonly (Y.Item | Y.GC)[]): Float64Array | null {
  const { writers } = kept(document)
  let known = writers.get(client)
  // A count of structs other than the totals' own is a change `markStale` did not see: read again.
  if (known === undefined || (known.staleFrom === Infinity && known.counted !== structs.length)) {
    known = { totals: new Float64Array(0), counted: 0, staleFrom: 0 }
    writers.set(client, known)
  }
  if (known.staleFrom === Infinity) return known.totals
  // Totals a struct of an unknown kind left unread are read again whole.
  const from = known.totals === null ? 0 : Math.min(firstAltered(structs, known.staleFrom), known.counted)
  known.totals = runningBytes(structs, known.totals ?? undefined, from)
  known.counted = structs.length
  known.staleFrom = Infinity
  return known.totals
}

/**
 * The delete set's ranges of `client`'s structs in `document` and the bytes of their clocks and
 * lengths (`writeDeleteSet`), walked on from the last checkpoint before the first struct a change
 * could have altered.
 *
 * @example
 * const { count, bytes } = deletedRangeBytes(document, client, structs)
 * if (count > 0) varUintBytes(client) + varUintBytes(count) + bytes // the client's part of the delete set
 */
export function deletedRangeBytes(document: Y.Doc, client: number, structs: readonly Y.AbstractStruct[]): { readonly count: number; readonly bytes: number } {
  const { deletions } = kept(document)
  let walk = deletions.get(client)
  // A count of structs other than the walk's own is a change `markStale` did not see: walk again.
  if (walk === undefined || (walk.staleFrom === Infinity && walk.walked !== structs.length)) {
    walk = { checkpoints: new Float64Array(4), walked: 0, staleFrom: 0, whole: null }
    deletions.set(client, walk)
  }
  if (walk.staleFrom === Infinity && walk.whole !== null) return walk.whole
  // The checkpoints kept end before the last struct walked.
  const from = Math.min(firstAltered(structs as (Y.Item | Y.GC)[], walk.staleFrom), Math.max(0, walk.walked - 1))
  walk.whole = walkDeletions(structs, walk, Math.floor(from / CHECKPOINT_SPACING))
  walk.walked = structs.length
  walk.staleFrom = Infinity
  return walk.whole
}

/** The index of the first struct a change marked from `staleFrom` may have altered: the one holding that clock (0 when the measure was never taken). */
function firstAltered(structs: readonly (Y.Item | Y.GC)[], staleFrom: number): number {
  return staleFrom === 0 || structs.length === 0 ? 0 : Y.findIndexSS(structs as (Y.Item | Y.GC)[], staleFrom)
}

/** Walks `structs` from checkpoint `checkpoint` on, keeping a checkpoint at every `CHECKPOINT_SPACING`-th struct: a run of deleted structs ends at the first one not deleted. */
function walkDeletions(structs: readonly Y.AbstractStruct[], walk: DeletionWalk, checkpoint: number): { readonly count: number; readonly bytes: number } {
  const needed = 4 * Math.ceil(structs.length / CHECKPOINT_SPACING)
  if (walk.checkpoints.length < needed) {
    // Room for the writer to grow by half before the checkpoints are copied again.
    const grown = new Float64Array(Math.ceil(needed * 1.5))
    grown.set(walk.checkpoints.subarray(0, 4 * (checkpoint + 1)))
    walk.checkpoints = grown
  }
  const at = 4 * checkpoint
  let ranges = walk.checkpoints[at] as number
  let bytes = walk.checkpoints[at + 1] as number
  let runClock = walk.checkpoints[at + 2] as number
  let runLength = walk.checkpoints[at + 3] as number
  for (let i = checkpoint * CHECKPOINT_SPACING; i < structs.length; i++) {
    if (i % CHECKPOINT_SPACING === 0) {
      const entry = 4 * (i / CHECKPOINT_SPACING)
      walk.checkpoints[entry] = ranges
      walk.checkpoints[entry + 1] = bytes
      walk.checkpoints[entry + 2] = runClock
      walk.checkpoints[entry + 3] = runLength
    }
    const struct = structs[i] as Y.AbstractStruct
    if (struct.deleted) {
      if (runLength === 0) runClock = struct.id.clock
      runLength += struct.length
    } else if (runLength > 0) {
      ranges++
      bytes += varUintBytes(runClock) + varUintBytes(runLength)
      runLength = 0
    }
  }
  return runLength === 0 ? { count: ranges, bytes } : { count: ranges + 1, bytes: bytes + varUintBytes(runClock) + varUintBytes(runLength) }
}

/** What is kept of `document`'s writers, marked stale by every transaction from the first call on, and by those it comes in the middle of. */
function kept(document: Y.Doc): KeptMeasures {
  let measures = keptMeasures.get(document)
  if (measures === undefined) {
    const created: KeptMeasures = { writers: new Map(), deletions: new Map() }
    measures = created
    keptMeasures.set(document, created)
    // Before the observers, and so before the garbage collection replaces a deleted type's children.
    document.on('beforeObserverCalls', (transaction: Y.Transaction) => {
      if (transaction.doc.gc) collectTypeChildren(transaction)
    })
    // A first weigh from an observer (or an `afterTransaction` listener) comes after its
    // transaction's `beforeObserverCalls` and before its garbage collection: the children that
    // collection replaces are collected now. A transaction whose collection is past has none left.
    if (document.gc) for (const pending of document._transactionCleanups) collectTypeChildren(pending)
    // After the cleanup: the transaction's structs are garbage collected and merged by then.
    document.on('afterTransactionCleanup', (transaction: Y.Transaction) => {
      const changed = changedClocks(transaction)
      markStale(created.writers, changed)
      markStale(created.deletions, changed)
    })
  }
  return measures
}

/**
 * The earliest clock of each writer `transaction` changed a struct of (see the file's header):
 * what it appended, deleted, split, and what its garbage collection replaced of deleted types'
 * children.
 */
function changedClocks(transaction: Y.Transaction): Map<number, number> {
  const changed = collectedChildren.get(transaction) ?? new Map<number, number>()
  const note = (client: number, clock: number): void => {
    changed.set(client, Math.min(changed.get(client) ?? Infinity, clock))
  }
  for (const [client, deleted] of transaction.deleteSet.clients) for (const range of deleted) note(client, range.clock)
  for (const struct of transaction._mergeStructs) note(struct.id.client, struct.id.clock)
  for (const [client, after] of transaction.afterState) {
    const before = transaction.beforeState.get(client) ?? 0
    if (after !== before) note(client, before)
  }
  return changed
}

/**
 * Marks each kept measure of a writer `changed` names stale from the clock before the earliest it
 * changed: a struct merged into its left neighbours ends in the one holding that clock.
 */
function markStale(measures: Map<number, { staleFrom: number }>, changed: ReadonlyMap<number, number>): void {
  for (const [client, clock] of changed) {
    const known = measures.get(client)
    if (known !== undefined) known.staleFrom = Math.min(known.staleFrom, Math.max(0, clock - 1))
  }
}

/**
 * Collects, before `transaction`'s garbage collection, the structs it will replace by GCs without
 * naming them: a deleted type's children (`ContentType.gc`), whose entries a map key held before
 * its last Yjs records nowhere else, nor the children of a type deleted before and not collected.
 * Reads the structs the transaction deleted and the deleted types' children, as the collection does.
 */
function collectTypeChildren(transaction: Y.Transaction): void {
  const store = transaction.doc.store
  const children = new Map<number, number>()
  const seen = new Set<Y.AbstractType<unknown>>()
  const collect = (type: Y.AbstractType<unknown>): void => {
    if (seen.has(type)) return
    seen.add(type)
    const child = (item: Y.Item): void => {
      children.set(item.id.client, Math.min(children.get(item.id.client) ?? Infinity, item.id.clock))
      if (item.content instanceof Y.ContentType) collect(item.content.type)
    }
    for (let item = type._start; item !== null; item = item.right) child(item)
    for (const last of type._map.values()) for (let item: Y.Item | null = last; item !== null; item = item.left) child(item)
  }
  for (const [client, deleted] of transaction.deleteSet.clients) {
    const structs = store.clients.get(client)
    if (structs === undefined) continue
    for (const range of deleted) {
      for (let i = Y.findIndexSS(structs, range.clock); i < structs.length; i++) {
        const struct = structs[i] as Y.Item | Y.GC
        if (struct.id.clock >= range.clock + range.len) break
        if (struct instanceof Y.Item && struct.content instanceof Y.ContentType) collect(struct.content.type)
      }
    }
  }
  if (children.size > 0) collectedChildren.set(transaction, children)
}
