import type { StreamEvent } from '../input/event.ts'

/**
 * An aggregate: a value computed over a window's events and kept as plain-data state that
 * replicas exchange as bytes, beside the built-in count, sum, min and max.
 *
 * Where states go. Each source's cell carries its own state, written only by the replica that
 * owns the source (`add` per event) and replaced whole by a newer version, never joined across
 * versions. A window's value combines the states of its sources' cells, and for sliding and
 * cumulating windows the states of its slices, with `merge`; each source or slice is combined
 * exactly once, and the engine folds them in a canonical order (by slice, then source), so every
 * replica computes the same bytes from the same cells.
 *
 * The laws (checked for any aggregate by `checkAggregateLaws` in the test kit), with `≡` meaning
 * equal encodings:
 * - `merge(a, b) ≡ merge(b, a)` and `merge(merge(a, b), c) ≡ merge(a, merge(b, c))`: the window
 *   value does not depend on which source or slice came first or how they were grouped.
 * - `merge(init(), a) ≡ a`: an empty cell changes nothing.
 * - adding the values `xs ++ ys` to `init()` ≡ merging the states of `xs` and of `ys`: a source's
 *   events split across slices, cells or batches give the value of one pass.
 * - `decode(encode(a)) ≡ a`, and `decode` throws only RangeErrors.
 * - `merge(a, a) ≡ a` only when `idempotent` is declared (a lattice join). The engine never
 *   relies on it: combining cells counts each once. A commutative monoid (counts that add) is
 *   enough and is what sums and histograms are.
 *
 * `add` may update `state` in place and return it, or return a new state; the engine keeps what
 * it returns. `merge` never modifies `a` or `b`. `result` returns a fresh value.
 *
 * @example
 * const spread = histogram({ bounds: [10, 50, 100] })
 * let state = spread.init()
 * for (const event of events) state = spread.add(state, spread.read(event), event)
 * spread.result(state) // [3, 1, 0, 2]
 */
export interface Aggregate<State, Result, Input = number> {
  /** The kind of aggregate: `quantiles`, `distinct`, `latest`, `histogram`, or a user's name. */
  readonly name: string
  /**
   * Everything that shapes the state, as text: replicas whose configurations differ must not
   * merge states (an `of` function cannot be compared: same configuration means same `of` by contract).
   */
  readonly configuration: string
  /** True when `merge` is a lattice join (also `merge(a, a) ≡ a`); false for a commutative monoid. */
  readonly idempotent: boolean
  /** This aggregate's input from an event: `of(event)`, or `event.value` when `of` is not given. */
  read(event: StreamEvent): Input
  /** Why `input` cannot be added (the engine reports the event as an anomaly), or null when it can. */
  checkInput(input: Input): string | null
  /** The empty state. */
  init(): State
  /** Adds one event's input; may update `state` in place. Returns the new state. */
  add(state: State, input: Input, event: StreamEvent): State
  /** The combination of two states (see the laws); modifies neither. */
  merge(a: State, b: State): State
  /**
   * Optional: `merge(into, from)` computed into `into`, which the caller owns and gives up (it
   * may be changed, as `add` may change its state); `from` is not changed. Returns the state to
   * keep. The engine folds a window's cells this way when it is there, sparing a state per cell.
   */
  mergeInto?(into: State, from: State): State
  /** The value a window shows for this state. */
  result(state: State): Result
  /** The state as bytes, the same bytes for equal states (columns, write-ahead log, checkpoints). */
  encode(state: State): Uint8Array
  /** A state from `encode`'s bytes; throws a RangeError naming the problem for anything else. */
  decode(bytes: Uint8Array): State
  /** Bit-identical states: what replicas compare to know they converged. */
  equals(a: State, b: State): boolean
}

/**
 * Any aggregate, whatever its state, result and input: the type of each entry of the
 * `aggregates` option.
 *
 * @example
 * const aggregates: Readonly<Record<string, AnyAggregate>> = { latency: quantiles({ at: [0.5] }) }
 */
// biome-ignore lint/suspicious/noExplicitAny: states and inputs are opaque here; `any` keeps each entry's own types assignable.
export type AnyAggregate = Aggregate<any, unknown, any>

/**
 * The `aggregates` option: aggregates by the name results show them under.
 *
 * @example
 * const aggregates = { latency: quantiles({ at: [0.95] }), devices: distinct({ of: (e) => e.source }) } satisfies AggregateDefinitions
 */
export type AggregateDefinitions = Readonly<Record<string, AnyAggregate>>

/**
 * The result type of one aggregate.
 *
 * @example
 * type Devices = AggregateResult<ReturnType<typeof distinct>> // number
 */
export type AggregateResult<A> = A extends Aggregate<infer _State, infer Result, infer _Input> ? Result : never

/**
 * What a window shows for an `aggregates` record: each name mapped to its aggregate's result.
 *
 * @example
 * const aggregates = { latency: quantiles({ at: [0.5, 0.99] }), reading: latest() }
 * type Shown = AggregateResults<typeof aggregates> // { readonly latency: number[]; readonly reading: number | null }
 */
export type AggregateResults<T extends AggregateDefinitions> = { readonly [K in keyof T]: AggregateResult<T[K]> }
