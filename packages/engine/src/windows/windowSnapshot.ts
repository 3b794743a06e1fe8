import type { Cell } from '../lattice/cell.ts'
import type { Basis, WindowResult } from './windowResult.ts'

/**
 * What a checkpoint keeps of the window indexes (`EngineCheckpoint` in recovery/ holds them):
 * plain data, written by the windows and read back by them on restore.
 */

export interface WindowSnapshot {
  readonly window: string
  readonly key: string
  readonly start: number
  readonly end: number
  readonly fired: boolean
  readonly final: boolean
  readonly revision: number
  readonly basis: Basis
  readonly basisEnd: number
  readonly emitted: WindowResult | null
  readonly history: readonly WindowResult[]
  /** Format 1 only, tumbling windows: [source, cell] (their cells now live in `slices`). */
  readonly cells: readonly (readonly [string, Cell])[]
  /** Session windows: [source, fragment start, cell, its aggregate states encoded (with aggregates)]. */
  readonly fragments: readonly (readonly [string, number, Cell, (readonly Uint8Array[])?])[]
  /** Panes emitted, and how many of them on time or late. */
  readonly panes?: number
  readonly onTimePanes?: number
  /** Changed since its last pane. */
  readonly dirty?: boolean
  /** When its processing-time trigger fires (NaN: none armed), and the order it was armed in. */
  readonly timerAt?: number
  readonly timerSeq?: number
  /** Discarding mode: what arrived since its last pane, and whether the next pane carries the whole window. */
  readonly pending?: Cell | null
  /** With aggregates: the states of `pending`, encoded. */
  readonly pendingStates?: readonly Uint8Array[]
  readonly whole?: boolean
}

/**
 * One spec's slices: per key and slice start, its parts (`from`: the first window end counting
 * it), each a list of [source, cell, its aggregate states encoded (with aggregates)].
 */
export interface SliceIndexSnapshot {
  readonly window: string
  readonly slices: readonly (readonly [string, number, readonly (readonly [number, readonly (readonly [string, Cell, (readonly Uint8Array[])?])[]])[]])[]
}

export interface SessionIndexSnapshot {
  readonly window: string
  readonly sealed: readonly (readonly [string, number])[]
  readonly tombstones: readonly (readonly [string, readonly (readonly [string, number, Cell])[]])[]
}
