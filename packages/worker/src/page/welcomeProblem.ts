import { aggregatesMismatch } from '../protocol/aggregateIdentities.ts'
import { type AggregateIdentity, PROTOCOL_VERSION, type WelcomeMessage } from '../protocol/messages.ts'
import { rowsProblem } from '../protocol/windowRows.ts'

/**
 * Why a page cannot take a host's welcome, or null when it can: another protocol version, a
 * first frame whose rows it cannot read, or (given `expected`, the aggregates the page was told
 * to expect) an engine with other aggregates. The page fails with that reason rather than show
 * windows it would misread.
 *
 * @example
 * welcomeProblem(welcome, undefined) // null: same protocol, readable rows
 * welcomeProblem({ ...welcome, v: 1 }, undefined) // 'the host speaks protocol 1, this page 4: reload the page'
 */
export function welcomeProblem(welcome: WelcomeMessage, expected: readonly AggregateIdentity[] | undefined): string | null {
  const problem = rowsProblem(welcome.frame?.rows)
  if (welcome.v !== PROTOCOL_VERSION || problem !== null) return problem ?? `the host speaks protocol ${String(welcome.v)}, this page ${PROTOCOL_VERSION}: reload the page`
  return expected === undefined ? null : aggregatesMismatch(expected, welcome.options.aggregates)
}
