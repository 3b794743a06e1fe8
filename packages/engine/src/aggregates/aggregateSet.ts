import type { StreamEvent } from '../input/event.ts'
import { messageOf } from '../errors/errorMessage.ts'
import type { AnyAggregate } from './aggregate.ts'
import { compareBytes } from './byteOrder.ts'

/** One cell's aggregate states: one per aggregate, in the order of `AggregateSet.names`. */
export type States = unknown[]

/**
 * Decoded states of peers' groups that passed validation, per cell: each is handed to one cell
 * by the merge that follows (the WAL logs the group's bytes, and a replay decodes them again).
 */
export const groupStates = new WeakMap<object, readonly States[]>()

/**
 * Most aggregates one engine keeps (and one cell's entry in the document carries).
 *
 * @example
 * MAX_AGGREGATES // 32
 */
export const MAX_AGGREGATES = 32

const FUNCTIONS = ['read', 'checkInput', 'init', 'add', 'merge', 'result', 'encode', 'decode'] as const

/**
 * What a cell records of its own events, which a state it carries must agree with: how many,
 * where its window, slice or session fragment starts, and its last event time (a session cell
 * keeps it to the whole millisecond, floored).
 */
export interface CellEvents {
  readonly count: number
  readonly start: number
  readonly maxTs: number
}

/**
 * Why `state` cannot be the state of a cell holding `cell`'s events, or null: a hard invariant
 * of the aggregate (a sketch never holds more values than the cell counted), in O(state).
 */
export type CellAgreement<State> = (state: State, cell: CellEvents) => string | null

/** The built-in aggregates made so far: their merges are exact (see `AggregateSet.exact`), and what their states must agree with. */
const exactAggregates = new WeakMap<AnyAggregate, CellAgreement<unknown>>()

/**
 * Marks a built-in aggregate as exact, and returns it: its states hold integer counts, hash
 * registers or a total order, so merging them has no rounding, and adding an event to a fold of
 * cells gives, bit for bit, the fold of the cells with the event added to one of them.
 * `agreement` says why a peer's state cannot belong to the cell carrying it (`AggregateSet.disagreement`).
 *
 * @example
 * return exactAggregate({ name: 'histogram', ... }, (counts, cell) => (total(counts) > cell.count ? 'too many values' : null))
 */
export function exactAggregate<A extends AnyAggregate>(aggregate: A, agreement: CellAgreement<ReturnType<A['init']>>): A {
  // A state reaches its agreement only from its own aggregate's `decode`.
  exactAggregates.set(aggregate, agreement as CellAgreement<unknown>)
  return aggregate
}

/**
 * The `aggregates` option of one engine, checked and in a fixed order (by name, UTF-16 code
 * units), so cells carry their states as arrays and every replica lays them out alike. Merging
 * never modifies a state it is given (a fold may hand out a cell's own states: read them only).
 */
export class AggregateSet {
  readonly names: readonly string[]
  readonly list: readonly AnyAggregate[]
  /** What shapes the states, for the engine's configuration fingerprint. */
  readonly configuration: readonly (readonly [string, string])[]
  /** The empty states' encodings (tombstones, cells a peer never wrote to): shared, never modified. */
  readonly empty: readonly Uint8Array[]
  /**
   * Every aggregate is a built-in one, whose merges are exact: a slice may then keep its cells'
   * states folded and add each local event to that fold too, instead of folding its cells again
   * for every pane. A user's aggregate may round (sums of floats), and is folded in the canonical order.
   */
  readonly exact: boolean
  /** Each aggregate's `CellAgreement`, or null for a user's (whose invariants the engine does not know). */
  readonly #agreements: readonly (CellAgreement<unknown> | null)[]

  constructor(given: Readonly<Record<string, AnyAggregate>>) {
    this.names = Object.keys(given).sort()
    this.list = this.names.map((name) => given[name] as AnyAggregate)
    this.configuration = this.names.map((name, i) => [name, (this.list[i] as AnyAggregate).configuration])
    this.empty = this.encode(this.init())
    this.exact = this.list.every((a) => exactAggregates.has(a))
    this.#agreements = this.list.map((a) => exactAggregates.get(a) ?? null)
  }

  /** The checked option: null for none (absent or `{}`); throws a TypeError or RangeError naming the problem. */
  static of(given: unknown): AggregateSet | null {
    if (given === undefined) return null
    if (typeof given !== 'object' || given === null || Array.isArray(given)) throw new TypeError(`aggregates must be an object of aggregates by name, got ${given === null ? 'null' : typeof given}`)
    const names = Object.keys(given)
    if (names.length === 0) return null
    if (names.length > MAX_AGGREGATES) throw new RangeError(`aggregates: at most ${MAX_AGGREGATES}, got ${names.length}`)
    for (const name of names) {
      const a = (given as Record<string, unknown>)[name] as Partial<Record<string, unknown>> | null
      if (name.length === 0 || name.length > 100) throw new RangeError(`aggregates: a name must be 1 to 100 characters, got ${name.length}`)
      const missing = typeof a === 'object' && a !== null ? FUNCTIONS.find((f) => typeof a[f] !== 'function') : 'an aggregate'
      if (missing !== undefined || typeof a?.configuration !== 'string') {
        throw new TypeError(`aggregates.${name} must be made by quantiles, distinct, latest, histogram or defineAggregate (${missing ?? 'configuration'} is missing)`)
      }
    }
    return new AggregateSet(given as Readonly<Record<string, AnyAggregate>>)
  }

  /**
   * Reads each aggregate's input from `event` into `into`: null, or why the event cannot be
   * added (an `of` that threw, or an input `checkInput` refused), naming the aggregate.
   */
  inputs(event: StreamEvent, into: unknown[]): string | null {
    const list = this.list
    for (let i = 0; i < list.length; i++) {
      const a = list[i] as AnyAggregate
      let problem: string | null
      try {
        const input = a.read(event)
        problem = a.checkInput(input)
        into[i] = input
      } catch (error) {
        problem = `threw ${messageOf(error)}`
      }
      if (problem !== null) return `aggregate ${JSON.stringify(this.names[i])} (${a.name}): ${problem}`
    }
    return null
  }

  init(): States {
    return this.list.map((a) => a.init())
  }

  /** Adds one event's inputs to `states`, in place. An `add` that throws is named in the error. */
  add(states: States, inputs: readonly unknown[], event: StreamEvent): void {
    const list = this.list
    let i = 0
    try {
      for (; i < list.length; i++) states[i] = (list[i] as AnyAggregate).add(states[i], inputs[i], event)
    } catch (error) {
      throw this.#threw(i, 'add', error)
    }
  }

  /** The error of aggregate `i`'s `step` that threw `error`, naming the aggregate (what stops the engine). */
  #threw(i: number, step: string, error: unknown): Error {
    return new Error(`aggregate ${JSON.stringify(this.names[i])} (${(this.list[i] as AnyAggregate).name}): ${step} threw ${messageOf(error)}`, { cause: error })
  }

  /** `acc` combined with `states`: `states` itself when `acc` is null (nothing yet), else new states. */
  merge(acc: States | null, states: States): States {
    if (acc === null) return states
    let i = 0
    try {
      return this.list.map((a, j) => {
        i = j
        return a.merge(acc[j], states[j])
      })
    } catch (error) {
      throw this.#threw(i, 'merge', error)
    }
  }

  /**
   * `states` folded into `acc`, an accumulator the caller owns (changed in place; fresh when
   * null); `states` is not changed. What folds use: one accumulator for many cells.
   */
  mergeInto(acc: States | null, states: States): States {
    const into = acc ?? this.init()
    const list = this.list
    let i = 0
    try {
      for (; i < list.length; i++) {
        const a = list[i] as AnyAggregate
        into[i] = a.mergeInto === undefined ? a.merge(into[i], states[i]) : a.mergeInto(into[i], states[i])
      }
    } catch (error) {
      throw this.#threw(i, 'merge', error)
    }
    return into
  }

  /** What a window shows: each name mapped to its aggregate's result (the empty states' for null). */
  results(states: States | null): Record<string, unknown> {
    const s = states ?? this.init()
    const out: Record<string, unknown> = {}
    this.list.forEach((a, i) => {
      const name = this.names[i] as string
      let value: unknown
      try {
        value = a.result(s[i])
      } catch (error) {
        throw this.#threw(i, 'result', error)
      }
      // An own property even for '__proto__'.
      if (name === '__proto__') Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true })
      else out[name] = value
    })
    return out
  }

  /** The states' encodings (the empty states' for null); throws naming the aggregate whose `encode` threw. */
  encode(states: States | null): Uint8Array[] {
    if (states === null) return [...this.empty]
    let i = 0
    try {
      return this.list.map((a, j) => {
        i = j
        return a.encode(states[j])
      })
    } catch (error) {
      throw this.#threw(i, 'encode', error)
    }
  }

  /** States from their encodings; throws a RangeError naming the aggregate and the problem. */
  decode(bytes: readonly Uint8Array[]): States {
    if (!Array.isArray(bytes) || bytes.length !== this.list.length) throw new RangeError(`${Array.isArray(bytes) ? bytes.length : 'no'} aggregate states, this engine keeps ${this.list.length}`)
    return this.list.map((a, i) => {
      try {
        return a.decode(bytes[i] as Uint8Array)
      } catch (error) {
        throw new RangeError(`aggregate ${JSON.stringify(this.names[i])}: ${messageOf(error)}`)
      }
    })
  }

  /**
   * Why decoded `states` cannot be those of a cell holding `cell`'s events, naming the aggregate,
   * or null: what a peer's cell is refused for besides states that do not decode. A state that
   * disagrees with its cell would poison every window it is merged into (a `latest` past the
   * cell's last event outranks every later event for good).
   *
   * @example
   * aggregates.disagreement(states, { count: 2, start: 0, maxTs: 20 }) // 'aggregate "spread" (histogram): 3 values in a cell of 2 events'
   */
  disagreement(states: States, cell: CellEvents): string | null {
    const agreements = this.#agreements
    for (let i = 0; i < agreements.length; i++) {
      const problem = agreements[i]?.(states[i], cell) ?? null
      if (problem !== null) return `aggregate ${JSON.stringify(this.names[i])} (${(this.list[i] as AnyAggregate).name}): ${problem}`
    }
    return null
  }

  /** Order of two cells' states written under one version, by their encodings (`compareBytes`). */
  compare(a: readonly Uint8Array[], b: readonly Uint8Array[]): number {
    for (let i = 0; i < a.length; i++) {
      const order = compareBytes(a[i] as Uint8Array, b[i] as Uint8Array)
      if (order !== 0) return order
    }
    return 0
  }
}
