/**
 * An engine's replica port: what a transport (the Yjs binding) drives, and where it reports
 * back: its sync status and document size, the last replication error, and the engine's close.
 */
import { configurationOf, type ResolvedOptions } from '../config/engineOptions.ts'
import type { CellEntry } from '../lattice/cellEntry.ts'
import type { CellGroup } from '../lattice/cellGroup.ts'
import type { PeerMerge } from './remoteMerge.ts'
import type { ClockEntry, ExportOptions, LocalWrite, MergeReport, ReplicaPort, ReplicaState } from './replicaPort.ts'
import type { ReplicationOutbox } from './replicationOutbox.ts'
import type { SyncStatus } from './syncStatus.ts'
import { notifyEach, listenerOf } from '../errors/listenerError.ts'

const LOCAL_SYNC: SyncStatus = Object.freeze({ state: 'local', lastSync: null, pendingLocalUpdates: 0, peers: 0, refusal: null })

/** What the port reaches of its engine. */
export interface PortEngine {
  readonly replicaId: string
  readonly options: ResolvedOptions
  readonly outbox: ReplicationOutbox
  readonly peers: PeerMerge
  /** Peers' groups from `check()` (which reports what it leaves out), checked, logged, merged and settled. */
  mergeGroups(check: () => readonly CellGroup[], clocks: readonly ClockEntry[]): MergeReport
  /** Counts and keeps an anomaly of peers' state, and logs its count. */
  reportAnomaly(reason: 'invalid_remote_cell' | 'source_conflict', detail: string): void
  /** Every live cell and known clock, or only those of the sources `writer` writes. */
  exportState(writer: string | undefined): ReplicaState
  /** Tells subscribers that something besides results changed (a notification without changes). */
  notify(): void
  /** Throws when subscribers call the engine without end (`ChangeFeed.assertSettles`): a report from one changes nothing then. */
  settles(): void
  /** Throws when the engine is closed. */
  assertOpen(): void
}

/**
 * The replica port of one engine. Its members are arrow functions, so a transport may hold
 * them apart from the port.
 *
 * @example
 * const port = new EnginePort(engineSide)
 * port.setSyncStatus({ state: 'connected', lastSync: Date.now(), pendingLocalUpdates: 0, peers: 1, refusal: null }, 1_024)
 * port.status.state // 'connected'
 */
export class EnginePort implements ReplicaPort {
  readonly replicaId: string
  readonly configuration: string
  #status: SyncStatus = LOCAL_SYNC
  #docBytes = 0
  #error: string | null = null
  #closed = false
  readonly #closeListeners = new Set<() => void>()
  readonly #engine: PortEngine

  constructor(engine: PortEngine) {
    this.#engine = engine
    this.replicaId = engine.replicaId
    this.configuration = configurationOf(engine.options)
  }

  readonly onLocalWrite = (listener: (write: LocalWrite) => void): (() => void) => this.#engine.outbox.listen(listener)

  readonly mergeRemote = (cells: readonly CellEntry[], clocks: readonly ClockEntry[]): MergeReport =>
    this.#engine.mergeGroups(() => this.#engine.peers.validCells(cells), arrays('mergeRemote', cells, clocks))

  readonly mergeRemoteGroups = (groups: readonly CellGroup[], clocks: readonly ClockEntry[]): MergeReport =>
    this.#engine.mergeGroups(() => groups, arrays('mergeRemoteGroups', groups, clocks))

  readonly exportState = (options?: ExportOptions): ReplicaState => this.#engine.exportState(writerOf(options, 'exportState'))

  readonly exportDurableState = (deliver: (state: ReplicaState) => void, options?: ExportOptions): void => {
    listenerOf(deliver, 'exportDurableState')
    const writer = writerOf(options, 'exportDurableState')
    this.#engine.outbox.release({ ...this.#engine.exportState(writer), expired: [] }, deliver)
  }

  readonly reportAnomaly = (reason: 'invalid_remote_cell' | 'source_conflict', detail: string): void => {
    // Called from plain JavaScript: another reason would count NaN, and a log could not encode its record.
    if (reason !== 'invalid_remote_cell' && reason !== 'source_conflict') {
      throw new TypeError(`reportAnomaly: unknown reason ${String(reason)}`)
    }
    this.#engine.settles()
    this.#engine.reportAnomaly(reason, detail)
  }

  readonly reportError = (error: Error): void => {
    const message = (error as Partial<Error> | null)?.message
    if (typeof message !== 'string') throw new TypeError(`reportError needs an Error, got ${String(error)}`)
    this.#error = message
  }

  readonly onClose = (listener: () => void): (() => void) => {
    listenerOf(listener, 'onClose')
    if (this.#closed) {
      listener()
      return () => {}
    }
    this.#closeListeners.add(listener)
    return () => {
      this.#closeListeners.delete(listener)
    }
  }

  readonly setSyncStatus = (status: SyncStatus, docBytes: number): void => {
    const wrong = statusFault(status, docBytes)
    if (wrong) throw new TypeError(`setSyncStatus: ${wrong}`)
    this.#engine.settles()
    this.#status = status
    this.#docBytes = docBytes
    this.#engine.notify()
  }

  /** What the transport reported last (`local` until it reports). */
  get status(): SyncStatus {
    return this.#status
  }

  /** The shared document's size, as the transport reported it. */
  get docBytes(): number {
    return this.#docBytes
  }

  /** The last replication error the transport caught, if any. */
  get error(): string | null {
    return this.#error
  }

  /** The engine closed: every close listener is called once. */
  close(): void {
    if (this.#closed) return
    this.#closed = true
    // One that throws is reported; the others (tickWhenDue, transports) still let go.
    notifyEach([...this.#closeListeners], undefined)
    this.#closeListeners.clear()
  }
}

/**
 * `clocks`, once both arguments are arrays: from plain JavaScript anything may come, and it is
 * refused before any cell is counted (a count the merge's log record would not carry).
 */
function arrays(where: string, cells: unknown, clocks: readonly ClockEntry[]): readonly ClockEntry[] {
  if (!Array.isArray(cells) || !Array.isArray(clocks)) throw new TypeError(`${where} needs arrays of cells and clocks`)
  return clocks
}

/** The `writer` of an export's options from plain JavaScript: a replica id, or undefined for every source. */
function writerOf(options: ExportOptions | undefined, where: string): string | undefined {
  if (options === undefined) return undefined
  const refuse = (got: string): never => {
    throw new TypeError(`${where} needs options { writer?: a replica id }, got ${got}`)
  }
  if (typeof options !== 'object' || options === null) return refuse(String(options))
  const writer: unknown = options.writer
  if (writer === undefined || (typeof writer === 'string' && writer !== '')) return writer
  return refuse(`writer ${writer === '' ? "''" : String(writer)}`)
}

const isCount = (n: unknown): boolean => Number.isSafeInteger(n) && (n as number) >= 0

/** What each field of a sync status may hold. */
const STATUS_FIELDS: Readonly<Record<string, (value: unknown) => boolean>> = {
  state: (state) => ['local', 'connecting', 'connected', 'offline'].includes(state as string),
  lastSync: (time) => time === null || Number.isFinite(time),
  pendingLocalUpdates: isCount,
  peers: isCount,
  refusal: (text) => text === null || typeof text === 'string',
}

/**
 * What is wrong with a sync status from plain JavaScript, or '' when nothing is: the UI reads
 * it as it is stored, so a `null` or a `NaN` count is refused here, not shown.
 */
function statusFault(status: SyncStatus | null, docBytes: number): string {
  if (typeof status !== 'object' || status === null) return `needs a SyncStatus, got ${String(status)}`
  for (const [field, holds] of Object.entries(STATUS_FIELDS)) {
    const value = (status as unknown as Record<string, unknown>)[field]
    if (!holds(value)) return `invalid ${field} ${String(value)}`
  }
  return isCount(docBytes) ? '' : `invalid docBytes ${String(docBytes)}`
}
