import type { Cell } from './cell.ts'
import type { CellAddress } from './cellAddress.ts'

/** One cell and its address. A cell with `count === 0` is a tombstone. */
export interface CellEntry {
  readonly address: CellAddress
  readonly cell: Readonly<Cell>
  /** With aggregates: each aggregate's state of the cell, encoded (in the order of the aggregates' names). */
  readonly aggregates?: readonly Uint8Array[]
}
