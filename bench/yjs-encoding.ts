/**
 * yjs-encoding: which Yjs structure and update encoding keep replicated lattice cells small.
 *
 * Structures compared (value = [count, sum, min, max, maxTs, version] unless noted):
 *  - `ymap`: one shared Y.Map keyed by cell key, overwritten in place;
 *  - `kv-shared`: one shared Y.Array of [key, ...value] entries (y-utility YKeyValue style:
 *    append the new entry, delete the old one);
 *  - `kv-writer`: the same key-value array, but one root array per writing replica;
 *  - `ymap-writer`: one root Y.Map per writing replica.
 * Each is measured as a full-state update in v1 (what y-protocols sync and y-websocket send)
 * and v2 (Yjs' columnar encoding).
 *
 *   node --import tsx --conditions=@tidemark/source bench/yjs-encoding.ts
 */
import * as Y from 'yjs'
import { isMain } from './measure.ts'

type Value = readonly number[]

/** One way of storing cells in a doc, as seen by one writer. */
interface CellStore {
  set(key: string, value: Value): void
  delete(key: string): void
}

type Layout = 'ymap' | 'kv-shared' | 'kv-writer' | 'ymap-writer'

function mapStore(map: Y.Map<Value>): CellStore {
  return {
    set: (key, value) => map.set(key, value),
    delete: (key) => map.delete(key),
  }
}

/** Key-value entries in a Y.Array; deletes find their index with one scan per call. */
function arrayStore(array: Y.Array<readonly (string | number)[]>): CellStore {
  const live = new Set<string>()
  const remove = (key: string): void => {
    if (!live.has(key)) return
    let index = -1
    array.forEach((entry, i) => {
      if (index < 0 && entry[0] === key) index = i
    })
    if (index >= 0) array.delete(index, 1)
    live.delete(key)
  }
  return {
    set: (key, value) => {
      remove(key)
      array.push([[key, ...value]])
      live.add(key)
    },
    delete: remove,
  }
}

function storeFor(layout: Layout, doc: Y.Doc, writer: string): CellStore {
  switch (layout) {
    case 'ymap':
      return mapStore(doc.getMap('cells'))
    case 'ymap-writer':
      return mapStore(doc.getMap(`cells:${writer}`))
    case 'kv-shared':
      return arrayStore(doc.getArray('cells'))
    case 'kv-writer':
      return arrayStore(doc.getArray(`cells:${writer}`))
  }
}

function sizes(doc: Y.Doc): { v1: number; v2: number } {
  return { v1: Y.encodeStateAsUpdate(doc).byteLength, v2: Y.encodeStateAsUpdateV2(doc).byteLength }
}

/** The figure: 100 keys, each overwritten 1,000 times by one client, one transaction per round. */
export function overwrite(layout: Layout): { v1: number; v2: number } {
  const doc = new Y.Doc()
  const store = storeFor(layout, doc, 'w0')
  for (let round = 0; round < 1000; round++) {
    doc.transact(() => {
      for (let k = 0; k < 100; k++) store.set(`k${k}`, [round + 1, round * 1.5, 0.25, round, 1_700_000_000_000 + round, round + 1])
    })
  }
  return sizes(doc)
}

/**
 * A steady run: `writers` replicas, each with its own source, one ingest batch per second
 * touching `keys` series keys in the current one-minute window; a cell leaves the doc three
 * windows after its window ends (retention). Every batch is delivered to every other replica
 * at once (the docs stay in sync), so writers' items interleave as they do over a live link.
 * Returns the encoded size of one replica's doc every `sampleEvery` seconds.
 */
export function steady(
  layout: Layout,
  options: { writers: number; keys: number; seconds: number; sampleEvery: number },
): { second: number; v1: number; v2: number; liveCells: number }[] {
  const docs = Array.from({ length: options.writers }, () => new Y.Doc())
  docs.forEach((doc, i) => {
    doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === 'peer') return
      docs.forEach((other, j) => {
        if (j !== i) Y.applyUpdate(other, update, 'peer')
      })
    })
  })
  const stores = docs.map((doc, i) => storeFor(layout, doc, `w${i}`))
  const live: Set<string>[] = docs.map(() => new Set())
  const samples: { second: number; v1: number; v2: number; liveCells: number }[] = []
  const t0 = 1_700_000_000_000
  for (let second = 1; second <= options.seconds; second++) {
    const ts = t0 + second * 1000
    const start = ts - (ts % 60_000)
    const expireBefore = start - 3 * 60_000
    docs.forEach((doc, w) => {
      const store = stores[w] as CellStore
      const mine = live[w] as Set<string>
      doc.transact(() => {
        for (let k = 0; k < options.keys; k++) {
          const key = JSON.stringify(['tumbling:60000', `sensor-${k}`, start, `device-${w}`])
          const n = (ts - start) / 1000 + 1
          store.set(key, [n, n * 20.5, 18.25, 23.5 + (second % 7) * 0.1, ts, n])
          mine.add(key)
        }
        for (const key of mine) {
          const cellStart = JSON.parse(key)[2] as number
          if (cellStart < expireBefore) {
            store.delete(key)
            mine.delete(key)
          }
        }
      })
    })
    if (second % options.sampleEvery === 0) {
      const liveCells = live.reduce((n, s) => n + s.size, 0)
      samples.push({ second, ...sizes(docs[0] as Y.Doc), liveCells })
    }
  }
  return samples
}

/** Bytes per cell for 10k fresh cells: value as a number array (ContentAny) or as Float64 bytes (ContentBinary). */
export function bytesPerCell(): { numberArray: { v1: number; v2: number }; float64: { v1: number; v2: number } } {
  const cells = 10_000
  const build = (asBytes: boolean): { v1: number; v2: number } => {
    const doc = new Y.Doc()
    const array = doc.getArray<unknown>('cells:w0')
    doc.transact(() => {
      for (let i = 0; i < cells; i++) {
        const key = JSON.stringify(['tumbling:60000', `sensor-${i % 100}`, 1_700_000_040_000 + Math.floor(i / 100) * 60_000, 'device-0'])
        const value = [i % 60, (i % 60) * 20.37, 17.9, 24.15, 1_700_000_040_000 + i * 977, i % 60]
        array.push([asBytes ? [key, new Uint8Array(Float64Array.from(value).buffer)] : [key, ...value]])
      }
    })
    const { v1, v2 } = sizes(doc)
    return { v1: Math.round(v1 / cells), v2: Math.round(v2 / cells) }
  }
  return { numberArray: build(false), float64: build(true) }
}

export function run(): Record<string, unknown> {
  const layouts: Layout[] = ['ymap', 'kv-shared', 'kv-writer', 'ymap-writer']
  const overwrites = Object.fromEntries(layouts.map((l) => [l, overwrite(l)]))
  const steadyRuns = Object.fromEntries(
    layouts.map((l) => [l, steady(l, { writers: 3, keys: 20, seconds: 3600, sampleEvery: 600 })]),
  )
  return { overwrite100x1000: overwrites, steady3writers20keys1h: steadyRuns, bytesPerCell: bytesPerCell() }
}

if (isMain(import.meta.url)) {
  const figures = run()
  process.stdout.write(`${JSON.stringify(figures, null, 1)}\n`)
}
