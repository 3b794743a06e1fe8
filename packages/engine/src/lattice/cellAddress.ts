/**
 * Where a cell lives: window spec id, series key, window start (session: fragment start), source.
 *
 * @example
 * const address: CellAddress = { window: 'tumbling:60000', key: 'temp', start: 120_000, source: 'd1' }
 * cellKey(address.window, address.key, address.start, address.source) // the string key adapters store it under
 */
export interface CellAddress {
  readonly window: string
  readonly key: string
  readonly start: number
  readonly source: string
}
