import type { AggregateSet, States } from '../aggregates/aggregateSet.ts'
import type { StreamEvent } from '../input/event.ts'
import type { Cell } from '../lattice/cell.ts'
import type { SessionIndexSnapshot, SliceIndexSnapshot } from './windowSnapshot.ts'
import type { CellGroup } from '../lattice/cellGroup.ts'
import type { CellEntry } from '../lattice/cellEntry.ts'
import type { WindowState } from './windowState.ts'

/** Frontiers as they stood before the batch (they move only between batches: docs/semantics.md). */
export interface BatchFrontiers {
  /** Engine watermark W. */
  readonly watermark: number
  /** max(W, P): windows ending at or below it have fired. */
  readonly firing: number
  readonly lateness: number
  /** Batch number, to mark touched windows once. */
  readonly batch: number
  /** Someone listens for local writes (a transport): placement reports each written cell (`WindowTracker.written`). */
  readonly publish?: boolean
}

/** What an index reports back to the engine while it places events. */
export interface WindowTracker {
  /** A window entered live state. */
  created(window: WindowState): void
  /** A window's cells changed in this batch. */
  touched(window: WindowState): void
  /**
   * A session's end moved from `previousEnd`: a fired one needs a new place in the finality
   * queue, an unfired one whose end went down a new place in the firing queue (one whose end went
   * up is moved when its old place comes due).
   */
  grown(window: WindowState, previousEnd: number): void
  /** A local write changed the cell at this address (or made a tombstone), and its states; the replication layer publishes it. */
  written(window: string, key: string, start: number, source: string, cell: Cell, states: States | null): void
  /**
   * A session was absorbed into another (`gone`: it leaves live state) or changed identity (it
   * stays, under a new start): its emitted result is retracted.
   */
  swallowed(window: WindowState, gone: boolean): void
  /**
   * A window changed in a way its discarding panes cannot add up to: a peer's cell replaced one
   * it already counted, or a session absorbed another. Its next pane carries the whole window.
   */
  replaced(window: WindowState): void
  /** A cell left live state on its own, not with a window leaving (a session's tombstone pruned by time). */
  expired(window: string, key: string, start: number, source: string): void
}

/** Called for each cell address of a window or slice that left live state. */
export type ExpiredCell = (window: string, key: string, start: number, source: string) => void

/** The source an event is placed for (a `SourceClock`). */
export interface PlacementSource {
  readonly name: string
  /** Small integer unique among the engine's sources, for per-source caches. */
  readonly slot: number
}

/** Outcome bits of placing one event under one spec. */
export const ON_TIME = 1
export const ADMITTED_LATE = 2
export const REFUSED = 4

/** Places events of one window spec into windows. */
export interface WindowIndex {
  readonly id: string
  /** Discarding mode: windows collect what arrived since their last pane (`WindowState.pending`). */
  discarding: boolean
  /** The engine's aggregates (set once, before the first event); null without. */
  aggregates: AggregateSet | null
  /** Windows this spec would create for the event; used only near the `maxWindows` bound. */
  missingWindows(key: string, ts: number, frontiers: BatchFrontiers): number
  /** Most windows one event can create. */
  readonly maxNewPerEvent: number
  /**
   * Applies one event for `source` at the source's clock `version`, and with aggregates its
   * `inputs` (one per aggregate, read from `event`); returns ON_TIME / ADMITTED_LATE / REFUSED bits.
   * The event's `ts` and `value` are read from it here: passed as numbers to a call the
   * optimizer does not inline, each would be boxed, two heap numbers per event placed.
   */
  place(
    key: string,
    source: PlacementSource,
    version: number,
    frontiers: BatchFrontiers,
    tracker: WindowTracker,
    event: StreamEvent,
    inputs: readonly unknown[] | null,
  ): number
  /** The live window of `key` starting at `start` (ending at `end`, to tell cumulating windows apart), if any. */
  find(key: string, start: number, end?: number): WindowState | undefined
  /** Removes a window from live state, and the cells only it still counted (each through `expired`). */
  remove(window: WindowState, expired: ExpiredCell): void
  /** Live windows, unordered. */
  windows(): IterableIterator<WindowState>
  /** Live windows of one key, unordered (a query by key reads these, not every window). */
  windowsOf(key: string): Iterable<WindowState>
  readonly size: number
  /**
   * Merges peers' cell groups of this spec (already validated). Returns how many cells changed
   * state, were stale, or were past retention; touched windows go through `tracker`.
   */
  mergeRemote(groups: readonly CellGroup[], frontiers: RemoteFrontiers, tracker: WindowTracker): MergeCounts
  /** Puts a window back into live state (checkpoint recovery). */
  adopt(window: WindowState): void
  /** Index state beyond its windows (sessions: sealed ends and peers' tombstones; fixed specs: slices). */
  snapshot(): SessionIndexSnapshot | SliceIndexSnapshot | null
  restore(snapshot: SessionIndexSnapshot | SliceIndexSnapshot): void
  /** Smallest event time whose copies could still change a window of this spec (dedup horizon). */
  horizon(frontiers: BatchFrontiers): number
  /** Whether peers' cells named `window` (a spec id, or a slice part's name) belong to this index. */
  takes(window: string): boolean
  /** Cells held, and events in windows not fired yet (counted once per window). */
  gauges(): { cells: number; pending: number }
  /** Appends every live cell (and session tombstone) as a full-state exchange carries them; with `sources`, only theirs. */
  liveCells(out: CellEntry[], sources: ReadonlySet<string> | null): void
}

/** A peer's cell for one window (fixed) or one session fragment, with its decoded states and their encodings. */
export interface RemoteCell {
  readonly start: number
  readonly source: string
  readonly cell: Cell
  readonly states: States | null
  readonly bytes: readonly Uint8Array[] | undefined
}

/** Frontiers for a remote merge: like a batch, plus retention to recognise expired cells. */
export interface RemoteFrontiers extends BatchFrontiers {
  readonly retention: number
}

export interface MergeCounts {
  applied: number
  stale: number
  expired: number
  finalityViolations: number
  invalid: number
}

/**
 * Adds `counts` to `total`.
 *
 * @example
 * addMergeCounts(total, index.mergeRemote(groups, frontiers, tracker))
 */
export function addMergeCounts(total: MergeCounts, counts: Readonly<MergeCounts>): void {
  total.applied += counts.applied
  total.stale += counts.stale
  total.expired += counts.expired
  total.finalityViolations += counts.finalityViolations
  total.invalid += counts.invalid
}
