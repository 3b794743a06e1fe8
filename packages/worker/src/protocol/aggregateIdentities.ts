import type { AggregateDefinitions } from '@tidemark/engine'
import type { AggregateIdentity } from './messages.ts'

/**
 * The names and configurations of an `aggregates` option, in the engine's order (by name): what
 * a host tells its pages, and what a page that names the aggregates it expects compares.
 *
 * @example
 * aggregateIdentities({ p: quantiles({ at: [0.95] }), devices: distinct({ of: (e) => e.source }) })
 * // [{ name: 'devices', configuration: '…' }, { name: 'p', configuration: '…' }]
 */
export function aggregateIdentities(aggregates: AggregateDefinitions | undefined): AggregateIdentity[] {
  if (aggregates === undefined) return []
  return Object.keys(aggregates)
    .sort()
    .map((name) => ({ name, configuration: String(aggregates[name]?.configuration) }))
}

/**
 * Why a page that expects `expected` cannot mirror a host whose engine has `hosted`, or null
 * when they are the same aggregates.
 *
 * @example
 * aggregatesMismatch(aggregateIdentities(mine), welcome.options.aggregates) // null, or what differs
 */
export function aggregatesMismatch(expected: readonly AggregateIdentity[], hosted: readonly AggregateIdentity[]): string | null {
  const list = (ids: readonly AggregateIdentity[]): string => ids.map((id) => `${id.name} ${id.configuration}`).join(', ') || 'none'
  const host = list(hosted)
  const page = list(expected)
  return host === page ? null : `the host's engine has the aggregates ${host}, this page expects ${page}: reload the page`
}
