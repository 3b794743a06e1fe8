/**
 * A fuzz scenario: a fast-check arbitrary of plain-data cases and a check that runs one
 * case against the engine and throws an `InvariantViolation` when an invariant breaks.
 * Cases are plain data so that a failing one can be shrunk, saved and replayed.
 */
import type fc from 'fast-check'

/** Work done, for the progress line and the summary. */
export interface Meter {
  ops: number
  events: number
  /** Invariant evaluations (a result comparison, a bound, an accounting identity...). */
  checks: number
}

export function newMeter(): Meter {
  return { ops: 0, events: 0, checks: 0 }
}

/** A case whose ops (and the events inside them) the delta debugger may remove. */
export interface OpListCase<Op> {
  readonly ops: readonly Op[]
}

export interface Scenario<C> {
  readonly name: string
  /** The file (family) it lives in, for `--list`. */
  readonly family: string
  /** One line: what input it produces and which invariants it stresses. */
  readonly summary: string
  readonly arbitrary: fc.Arbitrary<C>
  /** Runs one case; throws `InvariantViolation` (or whatever the engine threw) on failure. */
  check(testCase: C, meter: Meter): Promise<void> | void
  /**
   * Smaller variants of a failing case, tried by the delta debugger after fast-check's own
   * shrinking (op lists, events inside ops, simpler configurations). Optional.
   */
  reduce?(testCase: C): Iterable<C>
  /**
   * The same case with the triggers of known, reported engine bugs taken out; the release
   * gate runs with this so it stays green while exploratory runs keep finding them.
   */
  avoidKnownBugs?(testCase: C): C
  /** One line about a case: sizes and configuration. */
  describe(testCase: C): string
}

/** A scenario with its case type erased, for registries. */
// biome-ignore lint/suspicious/noExplicitAny: the registry holds scenarios of different case types
export type AnyScenario = Scenario<any>
