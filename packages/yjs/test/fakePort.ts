/**
 * A small ReplicaPort over plain maps: the lattice join of cells and clocks, a log of calls.
 * Lets bindDoc be tested without an engine.
 */
import * as Y from 'yjs'
import {
  type Cell,
  type CellAddress,
  type CellEntry,
  cellKey,
  type ClockEntry,
  type LocalWrite,
  mergeCell,
  type MergeReport,
  packCellGroup,
  type ReplicaPort,
  type SyncStatus,
} from '@tidemark/engine'
import { cellEntriesOf, validCellGroups } from '@tidemark/engine/adapter'
import { bindDoc } from '../src/binding/bindDoc.ts'
import { compareClocks, writeGroupEntry } from '../src/schema/docEntry.ts'

export interface FakePort extends ReplicaPort {
  readonly cells: Map<string, CellEntry>
  readonly clocks: Map<string, ClockEntry>
  readonly merges: { cells: readonly CellEntry[]; clocks: readonly ClockEntry[] }[]
  readonly anomalies: { reason: string; detail: string }[]
  readonly statuses: { status: SyncStatus; docBytes: number }[]
  readonly errors: Error[]
  /** Itself: a fake engine that is only its replica port, for `bindDoc(port, doc)`. */
  readonly replica: ReplicaPort
  /** Emulates `engine.close()`: bindings on this port destroy themselves. */
  close(): void
  /** Emulates one local ingest batch of this replica's own source(s). */
  write(cells: readonly CellEntry[], clocks?: readonly ClockEntry[], expired?: readonly CellAddress[]): void
  /** Makes `mergeRemote` throw (an engine bug) until reset. */
  failMerges: boolean
}

export function fakePort(replicaId: string, configuration = 'tumbling:60000'): FakePort {
  const listeners = new Set<(write: LocalWrite) => void>()
  const closeListeners = new Set<() => void>()
  const port: FakePort = {
    get replica() {
      return port
    },
    replicaId,
    configuration,
    cells: new Map(),
    clocks: new Map(),
    merges: [],
    anomalies: [],
    statuses: [],
    errors: [],
    failMerges: false,
    onLocalWrite(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    mergeRemote(cells, clocks): MergeReport {
      if (port.failMerges) throw new Error('engine bug')
      port.merges.push({ cells, clocks })
      let applied = 0
      let stale = 0
      for (const entry of cells) {
        const key = keyOf(entry.address)
        const mine = port.cells.get(key)
        const merged = mine === undefined ? entry.cell : mergeCell(mine.cell as Cell, entry.cell as Cell)
        if (mine !== undefined && merged === mine.cell) stale++
        else {
          applied++
          port.cells.set(key, { address: entry.address, cell: merged })
        }
      }
      for (const clock of clocks) joinClock(port.clocks, clock)
      return { applied, stale, expired: 0, finalityViolations: 0, conflicts: 0 }
    },
    mergeRemoteGroups(groups, clocks): MergeReport {
      // As the engine does: every cell's values are checked, the invalid ones reported and skipped.
      const valid = validCellGroups(groups, (what, problem) => port.reportAnomaly('invalid_remote_cell', `${what}: ${problem}`))
      return port.mergeRemote(cellEntriesOf(valid), clocks)
    },
    exportState(options) {
      const writer = options?.writer
      const clocks = [...port.clocks.values()].filter((clock) => writer === undefined || clock.writer === writer)
      const sources = new Set(clocks.map((clock) => clock.source))
      return { cells: [...port.cells.values()].filter((entry) => writer === undefined || sources.has(entry.address.source)), clocks }
    },
    exportDurableState(deliver, options) {
      // No write-ahead log here: everything is durable at once.
      deliver(port.exportState(options))
    },
    reportAnomaly(reason, detail) {
      port.anomalies.push({ reason, detail })
    },
    setSyncStatus(status, docBytes) {
      port.statuses.push({ status, docBytes })
    },
    reportError(error) {
      port.errors.push(error)
    },
    onClose(listener) {
      closeListeners.add(listener)
      return () => closeListeners.delete(listener)
    },
    close() {
      for (const listener of [...closeListeners]) listener()
    },
    write(cells, clocks = [], expired = []) {
      for (const entry of cells) port.cells.set(keyOf(entry.address), entry)
      for (const clock of clocks) joinClock(port.clocks, clock)
      for (const address of expired) port.cells.delete(keyOf(address))
      for (const listener of listeners) listener({ cells, clocks, expired })
    },
  }
  return port
}

function joinClock(clocks: Map<string, ClockEntry>, clock: ClockEntry): void {
  const mine = clocks.get(clock.source)
  if (mine === undefined || compareClocks(clock, mine) > 0) clocks.set(clock.source, clock)
}

export function keyOf(address: CellAddress): string {
  return cellKey(address.window, address.key, address.start, address.source)
}

/** A cell entry with `count` events of value `value` (version = count unless given). */
export function cellOf(
  source: string,
  key: string,
  start: number,
  count: number,
  value = 1,
  version = count,
  window = 'tumbling:60000',
): CellEntry {
  return {
    address: { window, key, start, source },
    cell: { count, sum: count * value, min: value, max: value, maxTs: start + count, version },
  }
}

export function clockOf(source: string, writer: string, maxTs: number, version: number): ClockEntry {
  return { source, writer, maxTs, prefix: version, prefixTs: maxTs, provable: true, version }
}

/** The port's cells as a plain, sorted record for equality checks. */
export function cellTable(port: FakePort): Record<string, Cell> {
  const out: Record<string, Cell> = {}
  for (const key of [...port.cells.keys()].sort()) out[key] = { ...(port.cells.get(key)?.cell as Cell) }
  return out
}

/** One cell of a raw group: key, count, sum, min, max, maxTs, version. */
export type RawCell = readonly [string, number, number, number, number, number, number]

/**
 * A group entry as any peer could push it into its log, values unchecked (hostile tests change
 * its fields by position: 1 window, 2 start, 3 source, 4 keys JSON, 5 column bytes).
 */
export function rawGroup(source: string, start: number, cells: readonly RawCell[], window = 'tumbling:60000'): unknown[] {
  const group = packCellGroup(
    window,
    start,
    source,
    cells.map((c) => c[0]),
    cells.map(([, count, sum, min, max, maxTs, version]) => ({ count, sum, min, max, maxTs, version })),
  )
  return [...writeGroupEntry(group)]
}

/** `entry` with the field at `at` replaced. */
export function withField(entry: readonly unknown[], at: number, value: unknown): unknown[] {
  const out = [...entry]
  out[at] = value
  return out
}

/** Replicas `a` and `b` (fake ports), each bound to a doc of its own, as in two tabs or on two devices. */
export function boundReplicas(): { docA: Y.Doc; docB: Y.Doc; a: FakePort; b: FakePort } {
  const [docA, docB] = [new Y.Doc(), new Y.Doc()]
  const [a, b] = [fakePort('a'), fakePort('b')]
  bindDoc(a, docA)
  bindDoc(b, docB)
  return { docA, docB, a, b }
}

/**
 * `replica` with its durable exports held back, as `openEngine`'s gate holds them until the
 * write-ahead log has committed: the state is exported when asked for and handed over when the
 * test calls its entry of `durable`.
 */
export function exportsOnceDurable(replica: ReplicaPort): { readonly replica: ReplicaPort; readonly durable: (() => void)[] } {
  const durable: (() => void)[] = []
  const held = new Proxy(replica, {
    get: (target, key) =>
      key === 'exportDurableState'
        ? (deliver: Parameters<ReplicaPort['exportDurableState']>[0], options?: Parameters<ReplicaPort['exportDurableState']>[1]) => {
            const state = target.exportState(options)
            durable.push(() => deliver(state))
          }
        : Reflect.get(target, key, target),
  })
  return { replica: held, durable }
}
