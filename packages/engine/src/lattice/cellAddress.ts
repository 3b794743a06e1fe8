/** Where a cell lives: window spec id, series key, window start (session: fragment start), source. */
export interface CellAddress {
  readonly window: string
  readonly key: string
  readonly start: number
  readonly source: string
}
