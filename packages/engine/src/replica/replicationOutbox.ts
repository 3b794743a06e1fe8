import type { AggregateSet, States } from '../aggregates/aggregateSet.ts'
import { type Cell, cellKey, copyCell } from '../lattice/cell.ts'
import type { CellAddress } from '../lattice/cellAddress.ts'
import type { CellEntry } from '../lattice/cellEntry.ts'
import type { LocalWrite } from './replicaPort.ts'
import type { SourceClock } from '../time/sourceClock.ts'
import { notifyEach, listenerOf } from '../errors/listenerError.ts'

/**
 * What the local replica wrote since the last batch ended, waiting to be handed to the
 * replication layer as one `LocalWrite`. Costs nothing while nobody listens.
 */
export class ReplicationOutbox {
  readonly #listeners = new Set<(write: LocalWrite) => void>()
  #cells = new Map<string, CellEntry>()
  /**
   * Every cell this outbox listed, with its key in `#cells` and the address it went under, for
   * as long as the cell lives: a cell is written once per event placed in it, and its key (a
   * number turned into text, the costliest part) is built once, not once per event or per batch.
   */
  readonly #known = new WeakMap<Cell, ListedCell>()
  /** Writes handed out so far: a cell whose `listedIn` is this one is in `#cells` already. */
  #round = 0
  /** With aggregates: the live states of the cells in `#cells`, encoded when the write goes out. */
  #states = new Map<string, States | null>()
  /** The engine's aggregates; null without. */
  aggregates: AggregateSet | null = null
  #clocks = new Set<SourceClock>()
  #expired: CellAddress[] = []
  #gate: ((write: LocalWrite, deliver: (write: LocalWrite) => void) => void) | null = null
  // A transport that throws is reported: the batch was applied, the other transports and subscribers still hear of it.
  readonly #deliver = (write: LocalWrite): void => notifyEach(this.#listeners, write)

  get listening(): boolean {
    return this.#listeners.size > 0
  }

  listen(listener: (write: LocalWrite) => void): () => void {
    this.#listeners.add(listenerOf(listener, 'onLocalWrite'))
    return () => {
      this.#listeners.delete(listener)
    }
  }

  /** A cell written locally, and its states; one entry per address per batch (the last write wins). */
  cell(window: string, key: string, start: number, source: string, cell: Cell, states: States | null = null): void {
    if (this.#listeners.size === 0) return
    let known = this.#known.get(cell)
    if (known === undefined || known.start !== start || known.window !== window || known.key !== key || known.source !== source) {
      known = { at: cellKey(window, key, start, source), window, key, start, source, listedIn: -1 }
      this.#known.set(cell, known)
    }
    const at = known.at
    if (known.listedIn !== this.#round) {
      // Another cell object listed under this address gives way: the last write wins.
      const listed = this.#cells.get(at)
      if (listed !== undefined && listed.cell !== cell) {
        const other = this.#known.get(listed.cell)
        if (other !== undefined) other.listedIn = -1
      }
      this.#cells.set(at, { address: { window, key, start, source }, cell })
      known.listedIn = this.#round
    }
    if (this.aggregates !== null) this.#states.set(at, states)
  }

  clock(clock: SourceClock): void {
    if (this.#listeners.size > 0) this.#clocks.add(clock)
  }

  /** A cell this replica writes left live state: it may leave the shared document. */
  expire(address: CellAddress): void {
    if (this.#listeners.size > 0) this.#expired.push(address)
  }

  /**
   * Routes every later write through `gate`, which calls `deliver` when the write may go
   * out (openEngine: once it is durable). Gated writes carry copies of their cells, since
   * the live cells keep changing while a write waits.
   */
  gate(gate: (write: LocalWrite, deliver: (write: LocalWrite) => void) => void): void {
    this.#gate = gate
  }

  /** Hands everything collected to the listeners, in one write. */
  flush(): void {
    const write = this.take()
    if (write !== null) this.send(write)
  }

  /**
   * Everything collected, as one write (the aggregates' states encoded: user code, which may
   * throw), and the outbox emptied; null when no listener wants it or nothing was collected.
   * `send` hands it on: apart, so the listeners (which may call the engine) run outside the
   * engine's operation while the encoding runs inside it.
   *
   * @example
   * const write = outbox.take()
   * if (write !== null) outbox.send(write)
   */
  take(): LocalWrite | null {
    if (this.#listeners.size === 0) return null
    if (this.#cells.size === 0 && this.#clocks.size === 0 && this.#expired.length === 0) return null
    const aggregates = this.aggregates
    const states = this.#states
    const write: LocalWrite = {
      cells: aggregates === null ? [...this.#cells.values()] : [...this.#cells].map(([at, entry]) => ({ ...entry, aggregates: aggregates.encode(states.get(at) ?? null) })),
      clocks: [...this.#clocks].map((clock) => clock.entry()),
      expired: this.#expired,
    }
    this.#cells = new Map()
    this.#round++
    this.#states = new Map()
    this.#clocks = new Set()
    this.#expired = []
    return write
  }

  /** Hands a write `take` made to the listeners (through the gate, when there is one). */
  send(write: LocalWrite): void {
    this.release(write, this.#deliver)
  }

  /**
   * Hands `write` (the replica's whole state, for a first publish) to `deliver` once everything
   * it reflects may go out: at once without a gate, else through the gate, after the writes
   * already waiting there. Gated, its cells are copied now.
   */
  release(write: LocalWrite, deliver: (write: LocalWrite) => void): void {
    const gate = this.#gate
    if (gate === null) {
      deliver(write)
      return
    }
    gate({ ...write, cells: write.cells.map(copyEntry) }, deliver)
  }
}

/** A cell the outbox listed: its key in the pending write, the address it went under, and the write that lists it. */
interface ListedCell {
  readonly at: string
  readonly window: string
  readonly key: string
  readonly start: number
  readonly source: string
  listedIn: number
}

function copyEntry(entry: CellEntry): CellEntry {
  // Encoded states are bytes made for this write: shared, never changed.
  return entry.aggregates === undefined ? { address: entry.address, cell: copyCell(entry.cell) } : { address: entry.address, cell: copyCell(entry.cell), aggregates: entry.aggregates }
}
