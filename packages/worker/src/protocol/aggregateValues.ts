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

/** Reads the rows' aggregates in order, one row at a time. */
export class AggregateValuesReader {
  readonly #column: AggregateValues
  #at = 0

  constructor(column: AggregateValues) {
    this.#column = column
  }

  /** The next row's aggregates, as a fresh object with the engine's names in its order. */
  next(): Record<string, unknown> {
    const { names, values, others } = this.#column
    const out: Record<string, unknown> = {}
    for (const name of names) {
      const tag = values[this.#at++] as number
      let value: unknown
      if (tag === NULL) value = null
      else if (tag === NUMBER) value = values[this.#at++]
      else if (tag === OTHER) value = others[values[this.#at++] as number]
      else {
        value = Array.from(values.subarray(this.#at, this.#at + tag))
        this.#at += tag
      }
      // An own property even for '__proto__', as the engine's results have it.
      if (name === '__proto__') Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true })
      else out[name] = value
    }
    return out
  }
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
  for (let row = 0; row < rows; row++) {
    for (let n = 0; n < names.length; n++) {
      if (at >= values.length) return `the aggregate column ends at row ${row}`
      const tag = values[at++] as number
      if (tag === NULL) continue
      if (tag === NUMBER) at++
      else if (tag === OTHER) {
        const index = values[at++] as number
        if (!Number.isInteger(index) || index < 0 || index >= others.length) return `an aggregate names a value out of range (${index})`
      } else if (Number.isInteger(tag) && tag >= 0) at += tag
      else return `an aggregate has a bad tag ${tag}`
      if (at > values.length) return `the aggregate column ends at row ${row}`
    }
  }
  if (at !== values.length) return `the aggregate column has ${values.length - at} values past its rows`
  return null
}
