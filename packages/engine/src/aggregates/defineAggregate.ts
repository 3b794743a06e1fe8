import type { StreamEvent } from '../input/event.ts'
import { assertKnownOptions } from '../options/knownOptions.ts'
import { messageOf } from '../errors/errorMessage.ts'
import type { Aggregate } from './aggregate.ts'
import { sameBytes } from './byteOrder.ts'
import { eventValue, finiteInput } from './numericInput.ts'

/**
 * What a user writes to define an aggregate. The laws `Aggregate` states are the user's to keep
 * (check them with `checkAggregateLaws` from the test kit):
 * - `merge` commutative and associative on encodings, with `init()` as identity, and adding
 *   `xs ++ ys` equal to merging the states of `xs` and `ys` (so cells and slices combine to the
 *   value of one pass). Sums of floats hold this only up to rounding; the engine folds states in
 *   a canonical order, so replicas still agree bit for bit.
 * - `idempotent: true` only if also `merge(a, a) ≡ a` (a lattice join). Not needed by the engine.
 * - `encode` gives equal bytes for equal states (sort what has no order); `decode(encode(s)) ≡ s`;
 *   `decode` throws on bytes it did not write (another error becomes a RangeError naming the aggregate;
 *   a RangeError passes as it is, and the engine names the aggregate when it decodes a cell)
 *   and bounds what it allocates. Put a version byte first, to change the layout later.
 * - `merge` does not modify its arguments; `add` may update its state in place.
 *
 * @example
 * const definition: AggregateDefinition<number, number> = {
 *   name: 'sumOfSquares',
 *   init: () => 0,
 *   add: (sum, x) => sum + x * x,
 *   merge: (a, b) => a + b,
 *   result: (sum) => sum,
 *   encode: (sum) => {
 *     const bytes = new Uint8Array(8)
 *     new DataView(bytes.buffer).setFloat64(0, sum, true)
 *     return bytes
 *   },
 *   decode: (bytes) => {
 *     if (bytes.length !== 8) throw new RangeError(`expected 8 bytes, got ${bytes.length}`)
 *     return new DataView(bytes.buffer, bytes.byteOffset).getFloat64(0, true)
 *   },
 * }
 */
export interface AggregateDefinition<State, Result, Input = number> {
  /** A name for errors and the configuration (1 to 100 characters). */
  readonly name: string
  /** The empty state. */
  readonly init: () => State
  /** Adds one event's input; may update `state` in place. Returns the state to keep. */
  readonly add: (state: State, input: Input, event: StreamEvent) => State
  /** The combination of two states; modifies neither. */
  readonly merge: (a: State, b: State) => State
  /** What a window shows for a state. */
  readonly result: (state: State) => Result
  /** The state as bytes: equal bytes for equal states, a version byte first. */
  readonly encode: (state: State) => Uint8Array
  /** A state from `encode`'s bytes (which may be a view: copy what you keep); throws for anything else. */
  readonly decode: (bytes: Uint8Array) => State
  /** The input; default `event.value`. */
  readonly of?: (event: StreamEvent) => Input
  /** Why an input cannot be added (the event becomes an anomaly), or null; default: numbers must be finite. */
  readonly checkInput?: (input: Input) => string | null
  /** True when merge is a lattice join (`merge(a, a) ≡ a`); default false. */
  readonly idempotent?: boolean
  /** What shapes the state besides the name (a layout version, options); replicas differing in it refuse to merge. */
  readonly configuration?: string
  /** Bit-identical states; default: equal encodings. */
  readonly equals?: (a: State, b: State) => boolean
}

const KNOWN = ['name', 'init', 'add', 'merge', 'result', 'encode', 'decode', 'of', 'checkInput', 'idempotent', 'configuration', 'equals']
const REQUIRED = ['init', 'add', 'merge', 'result', 'encode', 'decode'] as const

/**
 * A user's aggregate, checked: the required functions are functions, no unknown key, a name,
 * and `encode(init())` is a Uint8Array. `decode` errors come back as RangeErrors (others wrapped
 * in one naming the aggregate), as the engine expects of hostile bytes. Throws a TypeError for a bad definition.
 *
 * @example
 * const sumOfSquares = defineAggregate({
 *   name: 'sumOfSquares',
 *   init: () => 0,
 *   add: (sum, x) => sum + x * x,
 *   merge: (a, b) => a + b,
 *   result: (sum) => sum,
 *   encode: (sum) => {
 *     const bytes = new Uint8Array(8)
 *     new DataView(bytes.buffer).setFloat64(0, sum, true)
 *     return bytes
 *   },
 *   decode: (bytes) => {
 *     if (bytes.length !== 8) throw new RangeError(`expected 8 bytes, got ${bytes.length}`)
 *     return new DataView(bytes.buffer, bytes.byteOffset).getFloat64(0, true)
 *   },
 * })
 * createEngine({ windows: tumbling(60_000), aggregates: { energy: sumOfSquares } })
 */
export function defineAggregate<State, Result, Input = number>(definition: AggregateDefinition<State, Result, Input>): Aggregate<State, Result, Input> {
  if (typeof definition !== 'object' || definition === null) throw new TypeError(`defineAggregate: expected a definition object, got ${definition === null ? 'null' : typeof definition}`)
  const { name } = definition
  if (typeof name !== 'string' || name.length === 0 || name.length > 100) throw new TypeError(`defineAggregate: name must be a string of 1 to 100 characters, got ${JSON.stringify(name)}`)
  const where = `defineAggregate(${name})`
  assertKnownOptions(where, definition, KNOWN)
  for (const key of REQUIRED) {
    if (typeof definition[key] !== 'function') throw new TypeError(`${where}: ${key} must be a function, got ${typeof definition[key]}`)
  }
  for (const key of ['of', 'checkInput', 'equals'] as const) {
    if (definition[key] !== undefined && typeof definition[key] !== 'function') throw new TypeError(`${where}: ${key} must be a function when given, got ${typeof definition[key]}`)
  }
  if (definition.idempotent !== undefined && typeof definition.idempotent !== 'boolean') throw new TypeError(`${where}: idempotent must be a boolean`)
  if (definition.configuration !== undefined && typeof definition.configuration !== 'string') throw new TypeError(`${where}: configuration must be a string`)
  const { encode, decode } = definition
  const empty = encode(definition.init())
  if (!(empty instanceof Uint8Array)) throw new TypeError(`${where}: encode must return a Uint8Array, got ${empty === null ? 'null' : typeof empty} for init()`)
  return {
    name,
    configuration: definition.configuration === undefined ? name : `${name}(${definition.configuration})`,
    idempotent: definition.idempotent ?? false,
    read: definition.of ?? (eventValue as unknown as (event: StreamEvent) => Input),
    checkInput: definition.checkInput ?? finiteInput,
    init: definition.init,
    add: definition.add,
    merge: definition.merge,
    result: definition.result,
    encode,
    decode(bytes) {
      if (!(bytes instanceof Uint8Array)) throw new RangeError(`${name} state: expected a Uint8Array, got ${bytes === null ? 'null' : typeof bytes}`)
      try {
        return decode(bytes)
      } catch (error) {
        if (error instanceof RangeError) throw error
        throw new RangeError(`${name} state: ${messageOf(error)}`, { cause: error })
      }
    },
    equals: definition.equals ?? ((a, b) => sameBytes(encode(a), encode(b))),
  }
}
