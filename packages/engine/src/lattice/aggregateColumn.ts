import { MAX_AGGREGATES } from '../aggregates/aggregateSet.ts'

/**
 * The aggregate states of a group's cells as one byte string (`CellGroup.aggregates` in the
 * document and the write-ahead log): empty for a group without aggregates; otherwise a varint
 * `A` (states per cell, 1 to `MAX_AGGREGATES`), then for each cell, for each aggregate, a varint
 * length and the state's bytes. Varints are unsigned LEB128.
 *
 * @example
 * const column = encodeAggregateColumn(group.aggregates) // Uint8Array
 * readAggregateColumn(column, group.keys.length) // the same states, per cell
 */
export function encodeAggregateColumn(aggregates: readonly (readonly Uint8Array[])[] | undefined): Uint8Array {
  if (aggregates === undefined || aggregates.length === 0) return new Uint8Array(0)
  const per = (aggregates[0] as readonly Uint8Array[]).length
  let size = 5
  for (const cell of aggregates) for (const state of cell) size += 5 + state.length
  const out = new Uint8Array(size)
  let at = varint(out, 0, per)
  for (const cell of aggregates) {
    if (cell.length !== per) throw new RangeError(`every cell of a group needs ${per} aggregate states, got ${cell.length}`)
    for (const state of cell) {
      at = varint(out, at, state.length)
      out.set(state, at)
      at += state.length
    }
  }
  return out.slice(0, at)
}

/**
 * A group's aggregate column read back for `cells` cells: per cell, its states as views into
 * `bytes` (read them, do not keep them); `undefined` for an empty column; a string saying why the
 * bytes are not such a column. Only the framing is checked here: whether each state decodes is
 * the engine's to judge, against the aggregates it keeps.
 *
 * @example
 * const states = readAggregateColumn(bytes, keys.length)
 * if (typeof states === 'string') refuse(states)
 */
export function readAggregateColumn(bytes: Uint8Array, cells: number): Uint8Array[][] | undefined | string {
  if (bytes.length === 0) return undefined
  let at = 0
  const read = (): number => {
    let value = 0
    let scale = 1
    for (let i = 0; i < 5 && at < bytes.length; i++) {
      const b = bytes[at++] as number
      value += (b & 0x7f) * scale
      if (b < 0x80) return value
      scale *= 0x80
    }
    return -1
  }
  const per = read()
  if (!(per >= 1 && per <= MAX_AGGREGATES)) return `aggregate states per cell must be 1..${MAX_AGGREGATES}, got ${per}`
  // Every state takes at least its length byte: a count beyond the bytes is damage, not a huge group.
  if (cells * per > bytes.length) return `${cells} cells of ${per} aggregate states cannot fit in ${bytes.length} bytes`
  const out: Uint8Array[][] = []
  for (let i = 0; i < cells; i++) {
    const cell: Uint8Array[] = []
    for (let a = 0; a < per; a++) {
      const length = read()
      if (length < 0 || at + length > bytes.length) return `aggregate state ${a} of cell ${i} overruns the column`
      cell.push(bytes.subarray(at, at + length))
      at += length
    }
    out.push(cell)
  }
  return at === bytes.length ? out : `${bytes.length - at} bytes after the last aggregate state`
}

function varint(out: Uint8Array, at: number, value: number): number {
  while (value >= 0x80) {
    out[at++] = (value & 0x7f) | 0x80
    value >>>= 7
  }
  out[at++] = value
  return at
}
