/**
 * How one aggregate's result is laid out in `values`: a tag, then what the tag says follows.
 * A tag of 0 or more is an array of that many numbers; the built-in aggregates show numbers,
 * arrays of numbers or null, so only a user aggregate with another kind of result (an object, a
 * string) takes the structured clone, through `others`.
 */
const NULL = -1
const NUMBER = -2
const OTHER = -3

/**
 * The `aggregates` of the rows of a frame that carry them: one float column the host transfers,
 * the names once per frame, and the results of another shape as they are.
 *
 * @example
 * // two rows, aggregates { devices: distinct(...), p: quantiles({ at: [0.5, 0.95] }) }:
 * // { names: ['devices', 'p'], values: Float64Array [-2, 3, 2, 12, 40,  -2, 1, 0], others: [] }
 */
export interface AggregateValues {
  /** The aggregates' names, in the engine's order (each row that has aggregates has all of them). */
  readonly names: readonly string[]
  /** Per row with aggregates, per name: a tag (-1 null, -2 a number follows, -3 an index into `others` follows, n ≥ 0 n numbers follow). */
  readonly values: Float64Array<ArrayBuffer>
  /** Results that are neither a number, an array of numbers nor null. */
  readonly others: readonly unknown[]
}

/** Builds the aggregate column of one frame, row by row. */
export class AggregateValuesWriter {
  #names: string[] | null = null
  #values: number[] = []
  #others: unknown[] = []

  /** Appends one row's `result.aggregates`; every row of a frame has the same names (one engine). */
  add(aggregates: Readonly<Record<string, unknown>>): void {
    let names = this.#names
    if (names === null) {
      names = Object.keys(aggregates)
      this.#names = names
    } else if (Object.keys(aggregates).length !== names.length || !names.every((name) => Object.hasOwn(aggregates, name))) {
      throw new Error(`a result's aggregates (${Object.keys(aggregates).join(', ')}) differ from the frame's (${names.join(', ')})`)
    }
    const values = this.#values
    for (const name of names) {
      const value = aggregates[name]
      if (value === null) values.push(NULL)
      else if (typeof value === 'number') values.push(NUMBER, value)
      else if (Array.isArray(value) && value.every((x) => typeof x === 'number')) {
        values.push(value.length)
        for (const x of value as number[]) values.push(x)
      }
      else values.push(OTHER, this.#others.push(value) - 1)
    }
  }

  /** The column, or undefined when no row had aggregates; the writer starts empty again. */
  take(): AggregateValues | undefined {
    const names = this.#names
    const out = names === null ? undefined : { names, values: Float64Array.from(this.#values), others: this.#others }
    this.#names = null
    this.#values = []
    this.#others = []
    return out
  }
}

/**
 * Reads the rows' aggregates in order: each call gives the next row's, as a fresh object with the
 * engine's names in its order ('__proto__' an own field, as the engine's results have it).
 */
export function aggregateValuesReader({ names, values, others }: AggregateValues): () => Record<string, unknown> {
  let at = 0
  return () =>
    Object.fromEntries(
      names.map((name) => {
        const tag = values[at++] as number
        if (tag === NULL) return [name, null]
        if (tag === NUMBER || tag === OTHER) {
          const value = values[at++] as number
          return [name, tag === NUMBER ? value : others[value]]
        }
        at += tag
        return [name, Array.from(values.subarray(at - tag, at))]
      }),
    )
}

/**
 * The first result of the column the structured clone refuses (a user aggregate's result holding
 * a function or a Symbol): its aggregate's name, which of the rows with aggregates holds it, and
 * the clone's error; null when every result can be cloned. Only results of another shape than
 * numbers are cloned one by one: what a host asks after a frame was refused, not per frame.
 *
 * @example
 * uncloneableResult(column) // { name: 'labelled', row: 3, error: DataCloneError }
 */
export function uncloneableResult({ names, values, others }: AggregateValues): { name: string; row: number; error: unknown } | null {
  let at = 0
  for (let row = 0; at < values.length; row++) {
    for (const name of names) {
      const tag = values[at++] as number
      if (tag === NUMBER) at++
      else if (tag === OTHER) {
        try {
          structuredClone(others[values[at++] as number])
        } catch (error) {
          return { name, row, error }
        }
      } else if (tag !== NULL) at += tag
    }
  }
  return null
}

/**
 * Why a received aggregate column cannot give `rows` rows, or null when it can. Every tag is
 * checked, so a decoder never reads past the column or names an `others` entry that is not there.
 */
export function aggregateValuesProblem(column: unknown, rows: number): string | null {
  if (typeof column !== 'object' || column === null) return 'the aggregate column is not an object'
  const { names, values, others } = column as Record<string, unknown>
  if (!Array.isArray(names) || !names.every((name) => typeof name === 'string') || !(values instanceof Float64Array) || !Array.isArray(others)) {
    return 'the aggregate column lacks names, values or others'
  }
  let at = 0
  let left = rows * names.length
  while (left > 0 && at < values.length) {
    left--
    const tag = values[at++] as number
    if (tag === NUMBER) at++
    else if (tag === OTHER) {
      const index = values[at++] as number
      if (!(index >= 0 && index < others.length && Number.isInteger(index))) return `the aggregate column names no value ${index}`
    } else if (tag !== NULL) {
      if (!(Number.isInteger(tag) && tag >= 0)) return `the aggregate column has a bad tag ${tag}`
      at += tag
    }
  }
  return left === 0 && at === values.length ? null : `the aggregate column does not hold ${rows} rows`
}
