/**
 * How cells and clocks are laid out in the shared `Y.Doc`, and how entries read from
 * peers are validated.
 *
 * Document layout (schema 3):
 *
 *   Y.Map   'tidemark:meta'               replicaId → [schema, configuration fingerprint]
 *   Y.Array 'tidemark:replica:<replicaId>' that replica's entries, appended in write order
 *
 * One root array per writing replica, used as a key-value log in the style of y-utility's
 * YKeyValue: a write appends the new entry and deletes the entries it supersedes. Only that
 * replica appends to its array, so its deleted entries are consecutive Yjs items of one
 * client and garbage-collect into a few runs; see README.md for the measurements that
 * chose this layout.
 *
 * Entries are flat arrays of Yjs "any" values:
 *
 *   group  ['g', window, start, source, keys (JSON array of strings), columns (bytes), aggregates (bytes)]
 *   clock  ['k', source, writer, maxTs, prefix, prefixTs, flags (bit 0 provable, bit 1 finished), version]
 *
 * A group holds one source's cells for every key of one window start (cellGroup.ts): the
 * columns are `6 × keys` little-endian float64 values, column after column (counts, sums,
 * mins, maxs, maxTs, versions). The aggregates column is empty for an engine without aggregates;
 * otherwise it holds each cell's aggregate states (`encodeAggregateColumn` in
 * @tidemark/engine/adapter: the number of states per cell, then per cell and aggregate a length
 * and the state's own encoding). One entry per group: one entry per cell made Yjs alone spend
 * ~400 ms decoding 80k cells, where a group costs Yjs one item.
 *
 * A group address (window, start, source) or a source may appear in several entries (a write
 * not yet cleaned up, two sessions of one replica, two writers of one source): readers take
 * the lattice join, so the order in which entries are seen never matters.
 */
import { type CellGroup, type ClockEntry, MAX_ABS_TS, MAX_NAME_LENGTH } from '@tidemark/engine'
import { DoubleSlab, encodeAggregateColumn, GROUP_COLUMNS, isName, isTime, isWindowStart, MAX_GROUP_CELLS, readAggregateColumn } from '@tidemark/engine/adapter'

/**
 * Bumped when the layout above changes incompatibly; part of each replica's meta entry.
 *
 * @example
 * DOC_SCHEMA // 3: a peer that writes another schema is refused with a ConfigurationMismatchError
 */
export const DOC_SCHEMA = 3

/**
 * The root `Y.Map` that lists replicas: replica id → `[schema, configuration fingerprint]`.
 *
 * @example
 * doc.getMap(META_NAME).keys() // the ids of every replica that wrote to this doc
 */
export const META_NAME = 'tidemark:meta'

/**
 * Prefix of each replica's root `Y.Array` of entries (`replicaArrayName`).
 *
 * @example
 * REPLICA_PREFIX + 'tab-1' // 'tidemark:replica:tab-1'
 */
export const REPLICA_PREFIX = 'tidemark:replica:'

const GROUP_TAG = 'g'
const CLOCK_TAG = 'k'
const GROUP_LENGTH = 7
const CLOCK_LENGTH = 8
const BYTES_PER_CELL = GROUP_COLUMNS * 8
const littleEndianHost = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1

/**
 * A cell or clock entry as stored in the doc. Never mutated: Yjs holds the same array.
 *
 * @example
 * for (const entry of doc.getArray<DocEntry>(replicaArrayName('tab-1')).toArray()) {
 *   if (entryKind(entry) === 'clock') console.log(readClockEntry(entry))
 * }
 */
export type DocEntry = readonly unknown[]

/**
 * The name of a replica's root array.
 *
 * @example
 * doc.getArray(replicaArrayName('tab-1')).length // entries tab-1 has written and not superseded
 */
export function replicaArrayName(replicaId: string): string {
  return REPLICA_PREFIX + replicaId
}

/**
 * The meta value a replica writes for itself.
 *
 * @example
 * doc.getMap(META_NAME).set(port.replicaId, metaValue(port.configuration))
 */
export function metaValue(configuration: string): readonly [number, string] {
  return [DOC_SCHEMA, configuration]
}

/**
 * The schema and configuration fingerprint of a meta value, or `null` when it is malformed.
 *
 * @example
 * const meta = readMeta(doc.getMap(META_NAME).get('tab-2'))
 * if (meta !== null && meta.schema !== DOC_SCHEMA) console.warn('tab-2 writes another schema')
 */
export function readMeta(value: unknown): { readonly schema: number; readonly configuration: string } | null {
  if (!Array.isArray(value) || value.length !== 2) return null
  const [schema, configuration] = value as unknown[]
  if (typeof schema !== 'number' || !Number.isSafeInteger(schema)) return null
  if (typeof configuration !== 'string' || configuration.length > 64 * MAX_NAME_LENGTH) return null
  return { schema, configuration }
}

/**
 * Groups' columns, copied out of the update's bytes (a view into the whole update, at any
 * alignment): one new buffer per group (thousands in a cold join) costs more than the copy. The
 * engine copies what it keeps, so groups live only as long as one merge.
 */
const groupColumns = new DoubleSlab(1 << 16)

/**
 * The doc entry of a group. The columns are copied: the entry is immutable once in Yjs.
 *
 * @example
 * doc.getArray(replicaArrayName(replicaId)).push([writeGroupEntry(packCellGroup('tumbling:60000', 0, 'd1', ['temp'], [cell]))])
 */
export function writeGroupEntry(group: CellGroup): DocEntry {
  const columns = group.columns
  let bytes: Uint8Array
  if (littleEndianHost) bytes = new Uint8Array(columns.buffer.slice(columns.byteOffset, columns.byteOffset + columns.byteLength))
  else {
    bytes = new Uint8Array(columns.length * 8)
    const view = new DataView(bytes.buffer)
    for (let i = 0; i < columns.length; i++) view.setFloat64(i * 8, columns[i] as number, true)
  }
  return [GROUP_TAG, group.window, group.start, group.source, JSON.stringify(group.keys), bytes, encodeAggregateColumn(group.aggregates)]
}

/**
 * The doc entry of a source clock.
 *
 * @example
 * const entries = engine.replica.exportState().clocks.map(writeClockEntry)
 */
export function writeClockEntry(clock: ClockEntry): DocEntry {
  return [
    CLOCK_TAG,
    clock.source,
    clock.writer,
    clock.maxTs,
    clock.prefix,
    clock.prefixTs,
    clockFlags(clock),
    clock.version,
  ]
}

/**
 * Which kind of entry this is, checked only as far as the tag and length.
 *
 * @example
 * entryKind(writeClockEntry(clock)) // 'clock'
 * entryKind(['c', 'tumbling:60000']) // null: not an entry of this schema
 */
export function entryKind(value: unknown): 'group' | 'clock' | null {
  if (!Array.isArray(value)) return null
  if (value.length === GROUP_LENGTH && value[0] === GROUP_TAG) return 'group'
  if (value.length === CLOCK_LENGTH && value[0] === CLOCK_TAG) return 'clock'
  return null
}

/** The group address of an entry, read without decoding its cells; `null` when it has none. */
export function groupAddressOf(value: unknown): { readonly window: string; readonly start: number; readonly source: string } | null {
  if (entryKind(value) !== 'group') return null
  const [, window, start, source] = value as unknown[]
  if (typeof window !== 'string' || typeof start !== 'number' || typeof source !== 'string') return null
  return { window, start, source }
}

/**
 * A peer's group entry, checked for shape (names, start, keys, column length, the framing of
 * the aggregate column); a string says why it is refused. The cells' values and aggregate states
 * are the engine's to check (`mergeRemoteGroups`: a state that does not decode refuses its cell,
 * not the group), as are window ids and alignment. The columns are copied out of the update's
 * buffer; the aggregate states are views into it. Bindings and the relay check entries here.
 *
 * @example
 * const group = readGroupEntry(entry)
 * if (typeof group === 'string') engine.replica.reportAnomaly('invalid_remote_cell', group)
 * else engine.replica.mergeRemoteGroups([group], [])
 */
export function readGroupEntry(value: unknown, keyLists?: KeyLists): CellGroup | string {
  if (entryKind(value) !== 'group') return `not a group entry: ${preview(value)}`
  const [, window, start, source, keysJson, bytes, states] = value as unknown[]
  if (!isName(window, 1)) return `window must be a string of 1..${MAX_NAME_LENGTH} characters: ${preview(window)}`
  if (!isName(source, 1)) return `source must be a string of 1..${MAX_NAME_LENGTH} characters: ${preview(source)}`
  if (!isWindowStart(start)) return `start must be a time within ±${MAX_ABS_TS} or a safe integer: ${preview(start)}`
  if (!(bytes instanceof Uint8Array) || bytes.byteLength === 0 || bytes.byteLength % BYTES_PER_CELL !== 0) {
    return `columns must be bytes, ${BYTES_PER_CELL} per cell: ${preview(bytes)}`
  }
  const n = bytes.byteLength / BYTES_PER_CELL
  if (n > MAX_GROUP_CELLS) return `a group holds at most ${MAX_GROUP_CELLS} cells: ${n}`
  // Each key costs at least 3 characters of JSON ("" and a comma) and at most 6 per character (\uXXXX).
  if (typeof keysJson !== 'string' || keysJson.length > n * (6 * MAX_NAME_LENGTH + 3) + 2) return `keys must be a JSON array of ${n} strings: ${preview(keysJson)}`
  const keys = keyLists?.get(keysJson) ?? readKeys(keysJson)
  if (typeof keys === 'string') return keys
  if (keys.length !== n) return `keys must be a JSON array of ${n} strings: ${preview(keysJson)}`
  if (!(states instanceof Uint8Array)) return `aggregates must be bytes: ${preview(states)}`
  const aggregates = readAggregateColumn(states, n)
  if (typeof aggregates === 'string') return aggregates
  keyLists?.set(keysJson, keys)
  let columns: Float64Array
  if (littleEndianHost) {
    columns = groupColumns.take(n * GROUP_COLUMNS)
    new Uint8Array(columns.buffer, columns.byteOffset, columns.byteLength).set(bytes)
  }
  else {
    columns = new Float64Array(n * GROUP_COLUMNS)
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    for (let i = 0; i < columns.length; i++) columns[i] = view.getFloat64(i * 8, true)
  }
  return aggregates === undefined ? { window, start, source, keys, columns } : { window, start, source, keys, columns, aggregates }
}

/**
 * Key lists already read, by their JSON text: a writer's groups mostly repeat one key list, and
 * sharing the parsed list skips the parse and lets the engine see equal lists by identity.
 */
export class KeyLists {
  readonly #lists = new Map<string, readonly string[]>()
  readonly #limit: number

  constructor(limit = 1024) {
    this.#limit = limit
  }

  #lastJson = ''
  #lastKeys: readonly string[] | undefined

  get(json: string): readonly string[] | undefined {
    // Consecutive groups of one writer mostly repeat the last list: one comparison, no hashing of the text.
    if (json === this.#lastJson) return this.#lastKeys
    const keys = this.#lists.get(json)
    if (keys !== undefined) {
      this.#lastJson = json
      this.#lastKeys = keys
    }
    return keys
  }

  set(json: string, keys: readonly string[]): void {
    // The list `get` just found: held already, and `has` would hash its text again.
    if (json === this.#lastJson) return
    this.#lastJson = json
    this.#lastKeys = keys
    if (this.#lists.has(json)) return
    if (this.#lists.size >= this.#limit) this.#lists.clear()
    this.#lists.set(json, keys)
  }
}

/** A key list from its JSON text, or why it is not one. */
function readKeys(json: string): readonly string[] | string {
  let keys: unknown
  try {
    keys = JSON.parse(json)
  } catch {
    return `keys must be a JSON array of strings: ${preview(json)}`
  }
  if (!Array.isArray(keys)) return `keys must be a JSON array of strings: ${preview(json)}`
  for (const key of keys) if (!isName(key, 0)) return `keys must be strings of at most ${MAX_NAME_LENGTH} characters: ${preview(key)}`
  return keys as string[]
}

/** How many cells a group entry this log wrote or read holds (0 when its columns are not bytes). */
export function entryCells(value: DocEntry): number {
  const bytes = value[5]
  return bytes instanceof Uint8Array ? Math.floor(bytes.byteLength / BYTES_PER_CELL) : 0
}

/** The keys of a group entry this log wrote or read (already checked), or `null`. */
export function groupKeysOf(value: DocEntry): readonly string[] | null {
  try {
    const keys: unknown = JSON.parse(value[4] as string)
    return Array.isArray(keys) ? (keys as string[]) : null
  } catch {
    return null
  }
}

/**
 * A peer's clock entry, validated; a string says why it is refused.
 *
 * @example
 * const clock = readClockEntry(entry)
 * if (typeof clock !== 'string') console.log(clock.source, 'written by', clock.writer)
 */
export function readClockEntry(value: unknown): ClockEntry | string {
  if (entryKind(value) !== 'clock') return `not a clock entry: ${preview(value)}`
  const [, source, writer, maxTs, prefix, prefixTs, flags, version] = value as unknown[]
  if (!isName(source, 1)) return `clock source must be a string of 1..${MAX_NAME_LENGTH} characters: ${preview(source)}`
  if (!isName(writer, 1)) return `clock writer must be a string of 1..${MAX_NAME_LENGTH} characters: ${preview(writer)}`
  if (!isTimeOrNone(maxTs)) return `clock maxTs must be a time or -Infinity: ${preview(maxTs)}`
  if (!isTimeOrNone(prefixTs)) return `clock prefixTs must be a time or -Infinity: ${preview(prefixTs)}`
  if (typeof prefix !== 'number' || !Number.isSafeInteger(prefix) || prefix < 0) {
    return `clock prefix must be a safe integer >= 0: ${preview(prefix)}`
  }
  if (flags !== 0 && flags !== 1 && flags !== 2 && flags !== 3) return `clock flags must be 0 to 3 (bit 0 provable, bit 1 finished): ${preview(flags)}`
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) {
    return `clock version must be a safe integer >= 0: ${preview(version)}`
  }
  return clockOf(source as string, writer as string, maxTs as number, prefix, prefixTs as number, flags, version)
}

/** A clock entry's flags: bit 0 provable, bit 1 finished (0 or 1 from writers that predate finishing). */
function clockFlags(clock: ClockEntry): number {
  return (clock.provable ? 1 : 0) | (clock.finished === true ? 2 : 0)
}

/**
 * The clock an entry's fields describe, `finished` only when it is (as the engine writes clocks).
 *
 * @example
 * clockOf('d1', 'phone', 9_000, 9, 9_000, 3, 12).finished // true
 */
export function clockOf(source: string, writer: string, maxTs: number, prefix: number, prefixTs: number, flags: number, version: number): ClockEntry {
  const clock: ClockEntry = { source, writer, maxTs, prefix, prefixTs, provable: (flags & 1) === 1, version }
  return (flags & 2) === 2 ? { ...clock, finished: true } : clock
}

/**
 * Total order on clocks: a higher version wins, and any fixed order on the content breaks
 * ties, so two writers of one source resolve the same way everywhere.
 */
export function compareClocks(a: ClockEntry, b: ClockEntry): number {
  return (
    order(a.version, b.version) ||
    order(a.maxTs, b.maxTs) ||
    order(a.prefix, b.prefix) ||
    order(a.prefixTs, b.prefixTs) ||
    order(Number(a.provable), Number(b.provable)) ||
    order(Number(a.finished === true), Number(b.finished === true)) ||
    order(a.writer, b.writer)
  )
}

function order<T extends number | string>(x: T, y: T): number {
  return x < y ? -1 : x > y ? 1 : 0
}

function isTimeOrNone(value: unknown): value is number {
  return value === Number.NEGATIVE_INFINITY || isTime(value)
}

/** A short, safe rendering of a hostile value for anomaly details. */
export function preview(value: unknown): string {
  let text: string
  if (typeof value === 'string') text = JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
  else if (Array.isArray(value)) text = `array(${value.length})`
  else if (value === null) text = 'null'
  else if (typeof value === 'object') text = value instanceof Uint8Array ? `bytes(${value.byteLength})` : 'object'
  else text = String(value)
  return text.length > 60 ? `${text.slice(0, 60)}…` : text
}
