import type { Cell } from './cell.ts'
import type { CellAddress } from './cellAddress.ts'

/**
 * One cell and its address. A cell with `count === 0` is a tombstone.
 *
 * @example
 * for (const { address, cell } of engine.replica.exportState().cells) {
 *   console.log(address.source, address.start, cell.count)
 * }
 */
export interface CellEntry {
  readonly address: CellAddress
  readonly cell: Readonly<Cell>
  /** With aggregates: each aggregate's state of the cell, encoded (in the order of the aggregates' names). */
  readonly aggregates?: readonly Uint8Array[]
}
