import { addBucketCounts } from './bucketCount.ts'
import type { ByteReader } from './byteReader.ts'
import type { ByteWriter } from './byteWriter.ts'

/**
 * One side (positive or negative values) of a quantile sketch: counts by bucket key, dense from
 * `offset`, at most `limit` keys wide. Both ends are non-zero unless the store is empty.
 *
 * The collapse rule keeps it bounded: a count whose key is below `top − limit + 1` (`top` = the
 * highest key ever counted) is counted at `top − limit + 1` instead. Each count therefore ends
 * at `max(key, top − limit + 1)`, a function of its own key and of the highest key of the
 * multiset, never of the order of adds and merges, so collapsing stays exact, commutative and
 * associative: any delivery order, batching or merge tree gives the same counts.
 *
 * @example
 * const store: BucketStore = { offset: 0, counts: [] }
 * addToStore(store, 230, 1, 2048)
 * store // { offset: 230, counts: [1] }
 */
export interface BucketStore {
  offset: number
  counts: number[]
}

/**
 * Counts `count` at `key`, collapsing as the rule says; in place.
 *
 * @example
 * const store: BucketStore = { offset: 0, counts: [] }
 * addToStore(store, 5, 1, 4)
 * addToStore(store, 9, 1, 4) // key 5 collapses into 6 = 9 − 4 + 1
 * store // { offset: 6, counts: [1, 0, 0, 1] }
 */
export function addToStore(store: BucketStore, key: number, count: number, limit: number): void {
  const counts = store.counts
  if (counts.length === 0) {
    store.offset = key
    counts.push(count)
    return
  }
  const top = store.offset + counts.length - 1
  if (key > top) {
    const cutoff = key - limit + 1
    if (cutoff > store.offset) {
      const drop = Math.min(cutoff - store.offset, counts.length)
      let moved = 0
      for (let i = 0; i < drop; i++) moved += counts[i] as number
      counts.splice(0, drop)
      store.offset = cutoff
      if (counts.length === 0) counts.push(0)
      counts[0] = addBucketCounts(counts[0] as number, moved)
    }
    while (store.offset + counts.length <= key) counts.push(0)
  } else if (key < store.offset) {
    const low = Math.max(key, top - limit + 1)
    if (low < store.offset) {
      growDown(counts, store.offset - low)
      store.offset = low
    }
    key = low
  }
  counts[key - store.offset] = addBucketCounts(counts[key - store.offset] as number, count)
}

/**
 * The combination of two stores under one limit: counts add, then collapse. A new store.
 *
 * @example
 * mergeStores({ offset: 5, counts: [1] }, { offset: 9, counts: [2] }, 4) // { offset: 6, counts: [1, 0, 0, 2] }
 */
export function mergeStores(a: BucketStore, b: BucketStore, limit: number): BucketStore {
  if (a.counts.length === 0) return { offset: b.offset, counts: b.counts.slice() }
  if (b.counts.length === 0) return { offset: a.offset, counts: a.counts.slice() }
  // The store with the lower offset is copied, the other added into the copy.
  const lower = a.offset <= b.offset
  const merged: BucketStore = lower ? { offset: a.offset, counts: a.counts.slice() } : { offset: b.offset, counts: b.counts.slice() }
  mergeStoreInto(merged, lower ? b : a, limit)
  return merged
}

/**
 * `mergeStores(into, from, limit)` written into `into` (the same counts), sparing a new store.
 *
 * @example
 * const into = { offset: 5, counts: [1] }
 * mergeStoreInto(into, { offset: 9, counts: [2] }, 4) // into: { offset: 6, counts: [1, 0, 0, 2] }
 */
export function mergeStoreInto(into: BucketStore, from: BucketStore, limit: number): void {
  const source = from.counts
  const n = source.length
  if (n === 0) return
  const counts = into.counts
  if (counts.length === 0) {
    into.offset = from.offset
    into.counts = source.slice()
    return
  }
  const top = Math.max(into.offset + counts.length, from.offset + n) - 1
  const cutoff = top - limit + 1
  const low = Math.max(Math.min(into.offset, from.offset), cutoff)
  if (low < into.offset) growDown(counts, into.offset - low)
  else if (low > into.offset) {
    // The keys below the cutoff count at the cutoff.
    const drop = Math.min(low - into.offset, counts.length)
    let moved = 0
    for (let i = 0; i < drop; i++) moved += counts[i] as number
    counts.splice(0, drop)
    if (counts.length === 0) counts.push(0)
    counts[0] = addBucketCounts(counts[0] as number, moved)
  }
  while (low + counts.length <= top) counts.push(0)
  let i = 0
  if (from.offset < cutoff) {
    // Then `low` is the cutoff: the keys below it count at it, in the first slot.
    const below = Math.min(cutoff - from.offset, n)
    let moved = 0
    for (; i < below; i++) moved += source[i] as number
    counts[0] = addBucketCounts(counts[0] as number, moved)
  }
  // The rest add slot by slot, at a fixed distance (adding a zero changes nothing).
  const shift = from.offset - low
  for (; i < n; i++) counts[i + shift] = addBucketCounts(counts[i + shift] as number, source[i] as number)
  into.offset = low
}

/**
 * Prepends `by` zero counts to `counts`, in place: a store reaching below its offset keeps its
 * array (callers own it) instead of allocating a longer one for every new lowest key.
 */
function growDown(counts: number[], by: number): void {
  const n = counts.length
  for (let i = 0; i < by; i++) counts.push(0)
  for (let i = n - 1; i >= 0; i--) counts[i + by] = counts[i] as number
  for (let i = 0; i < by; i++) counts[i] = 0
}

/**
 * Writes the store's non-empty buckets: `varint n`, then per bucket its key (the first as a
 * zigzag varint, the others as the varint gap from the previous key, at least 1) and its count
 * (varint, at least 1).
 *
 * @example
 * encodeStore(writer, { offset: 230, counts: [2, 0, 1] }) // 02 cc 03 02 02 01
 */
export function encodeStore(writer: ByteWriter, store: BucketStore): void {
  let n = 0
  for (const c of store.counts) if (c !== 0) n++
  writer.varint(n)
  let previous: number | null = null
  for (let i = 0; i < store.counts.length; i++) {
    const c = store.counts[i] as number
    if (c === 0) continue
    const key = store.offset + i
    if (previous === null) writer.signed(key)
    else writer.varint(key - previous)
    writer.varint(c)
    previous = key
  }
}

/**
 * Reads a store written by `encodeStore`, checking: at most `limit` buckets spanning at most
 * `limit` keys, keys increasing and within ±`keyLimit`, counts at least 1.
 *
 * @example
 * decodeStore(new ByteReader(bytes, 'quantiles state'), 'positive', 2048, 35_839)
 */
export function decodeStore(reader: ByteReader, side: string, limit: number, keyLimit: number): BucketStore {
  const n = reader.varint(`${side} number of buckets`, limit)
  const keys: number[] = []
  const values: number[] = []
  for (let i = 0; i < n; i++) {
    const key: number = i === 0 ? reader.signed(`${side} first key`, keyLimit) : (keys[i - 1] as number) + reader.varint(`${side} key gap`, 2 * keyLimit)
    if (i > 0 && key === keys[i - 1]) throw reader.fail(`${side} bucket keys must increase`)
    if (key > keyLimit) throw reader.fail(`${side} bucket key ${key} exceeds ${keyLimit}`)
    const count = reader.varint(`${side} bucket count`, Number.MAX_SAFE_INTEGER)
    if (count === 0) throw reader.fail(`${side} bucket ${key} has a zero count`)
    keys.push(key)
    values.push(count)
  }
  if (n === 0) return { offset: 0, counts: [] }
  const offset = keys[0] as number
  const span = (keys[n - 1] as number) - offset + 1
  if (span > limit) throw reader.fail(`${side} buckets span ${span} keys, more than maxBuckets ${limit}`)
  const counts = new Array<number>(span).fill(0)
  for (let i = 0; i < n; i++) counts[(keys[i] as number) - offset] = values[i] as number
  return { offset, counts }
}
