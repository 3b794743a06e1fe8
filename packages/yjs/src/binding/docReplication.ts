/**
 * Binds an engine's lattice state (through its `ReplicaPort`) to a `Y.Doc` (docs/replication.md).
 *
 * Local: one transaction per `LocalWrite`, into this replica's own log (docEntry.ts).
 * Remote: every transaction not made by this binding (a provider applying a peer's update,
 * a persistence provider loading) is read once it has committed: its new entries are
 * checked for shape, malformed ones are reported as `invalid_remote_cell`, and the groups and
 * clocks go to the engine in one `mergeRemoteGroups` call (which checks every cell's values), so a peer's update batch causes one notification.
 * Deletions from the doc are never merged: the lattice only grows, and a cell leaves the doc
 * only after it has left live state (retention).
 * Read-only (dashboards): the remote side alone; nothing is ever written to the doc, so a
 * read-only connection never has an update to send.
 */
import * as Y from 'yjs'
import { type CellGroup, type ClockEntry, type LocalWrite, MAX_NAME_LENGTH, type ReplicaPort, type ReplicaState } from '@tidemark/engine'
import { ConfigurationMismatchError } from '../schema/configurationMismatchError.ts'
import { DOC_SCHEMA, type DocEntry, META_NAME, preview, readMeta, replicaArrayName } from '../schema/docEntry.ts'
import { emptyWrite, type LogWrite, type ReadEntry, ReplicaEntries } from './replicaEntries.ts'
import { syncStatusTracker } from '../transport/syncStatusTracker.ts'
import type { BindDocOptions } from './bindDocOptions.ts'
import { engineSyncStatus, type StatusShare } from './engineSyncStatus.ts'
import { append, contentOf, emptyBatch, type RemoteBatch } from './remoteBatch.ts'
import { droppedSince, ForeignSessions, lostEntries, metaWritten } from './earlierSession.ts'
import { OwnMeta } from './ownMeta.ts'
import { SourceWriters } from './sourceWriters.ts'

/**
 * A live binding; `destroy` detaches it from the doc and the engine (the doc keeps its content).
 * Closing the engine destroys it too.
 *
 * @example
 * const binding = bindDoc(engine, doc)
 * for (const mismatch of binding.mismatches()) console.warn(mismatch.message)
 * binding.destroy()
 */
export interface DocBinding {
  /** Detaches the binding from the doc and the engine; the doc keeps its content. */
  destroy(): void
  /** Peer replicas currently refused for another configuration. */
  mismatches(): readonly ConfigurationMismatchError[]
}

/**
 * The binding `bindDoc` returns: keeps one engine's replica and one doc in step, in both
 * directions (see the file's header), until it is destroyed or the engine closes.
 *
 * @example
 * const binding = new DocReplication(engine.replica, doc, {})
 * binding.mismatches() // peers refused for another configuration
 * binding.destroy()
 */
export class DocReplication implements DocBinding {
  readonly #port: ReplicaPort
  readonly #doc: Y.Doc
  readonly #origin: unknown
  readonly #onError: (error: Error) => void
  readonly #now: () => number
  readonly #measureEvery: number
  readonly #maxReplicas: number
  /** Replicas refused for `maxReplicas`, judged again when the meta map changes and a slot is free. */
  readonly #overflowed = new Set<string>()
  readonly #readOnly: boolean
  /** Sources whose clocks this replica writes: the only ones it expires in other replicas' logs. */
  readonly #ownSources = new Set<string>()
  readonly #status: StatusShare
  readonly #meta: Y.Map<unknown>
  readonly #logs = new Map<string, ReplicaEntries>()
  /** By replica: stops observing its log (`#forgetGhost`). */
  readonly #stops = new Map<string, () => void>()
  readonly #own: ReplicaEntries
  /** The sessions of each replica whose entries are of another configuration: never merged. */
  readonly #foreignSessions: ForeignSessions
  readonly #mismatches = new Map<string, ConfigurationMismatchError>()
  readonly #writers: SourceWriters
  readonly #cleanups: (() => void)[] = []
  readonly #ownMeta: OwnMeta
  #batch: RemoteBatch = emptyBatch()
  #docBytes = 0
  #measuredAt = Number.NEGATIVE_INFINITY
  #destroyed = false

  constructor(port: ReplicaPort, doc: Y.Doc, options: BindDocOptions) {
    this.#port = port
    this.#doc = doc
    this.#foreignSessions = new ForeignSessions(doc)
    this.#origin = options.origin ?? { binding: port.replicaId }
    const report = options.onError ?? ((error: Error) => console.error(error))
    this.#onError = (error) => {
      port.reportError(error)
      report(error)
    }
    this.#now = options.now ?? Date.now
    this.#measureEvery = options.measureEvery ?? 5000
    this.#maxReplicas = options.maxReplicas ?? 10_000
    this.#writers = new SourceWriters(port.replicaId, (detail) => port.reportAnomaly('source_conflict', detail))
    this.#readOnly = options.readOnly === true
    // Made first, with this binding's clock: the first publish below reads the doc's status.
    const tracker = syncStatusTracker(doc, { now: this.#now })
    this.#status = engineSyncStatus(port).share(!this.#readOnly)
    this.#cleanups.push(() => this.#status.leave())
    this.#meta = doc.getMap(META_NAME)
    this.#ownMeta = new OwnMeta(doc, this.#meta, port, this.#origin, this.#now)
    this.#own = this.#openLog(port.replicaId) as ReplicaEntries

    const onMeta = (event: Y.YMapEvent<unknown>, tr: Y.Transaction): void => {
      if (tr.origin === this.#origin) return
      for (const key of event.keysChanged) {
        this.#batch.metaKeys.add(key)
        for (const { value, client } of metaWritten(this.#meta, tr, key)) {
          if (this.#ownMeta.holds(value)) this.#foreignSessions.accept(key, client)
          else {
            if (key === port.replicaId) {
              this.#batch.foreignOwnMeta = true
              this.#ownMeta.contested()
            }
            // That session's entries in this log, in this transaction or later ones, are not of this configuration (until it writes one of it).
            this.#foreignSessions.add(key, [client])
          }
        }
      }
    }
    this.#meta.observe(onMeta)
    this.#cleanups.push(() => this.#meta.unobserve(onMeta))
    doc.on('afterTransaction', this.#afterTransaction)
    this.#cleanups.push(() => doc.off('afterTransaction', this.#afterTransaction))
    // Measured once Yjs has cleaned up every transaction of the batch: deleted entries' content
    // (the entries a write supersedes) is gone from the doc only then.
    const measure = (): void => this.#measure(false)
    doc.on('afterAllTransactions', measure)
    this.#cleanups.push(() => doc.off('afterAllTransactions', measure))

    // The doc as found, measured before first contact merges it: the encoding's buffers (the doc's
    // size, twice) then meet a young generation that does not yet hold the merge's new state,
    // which collecting them would copy again (binding a doc of 80,000 cells: about a third of its time).
    this.#measure(true)
    this.#start()

    if (!this.#readOnly) this.#cleanups.push(port.onLocalWrite((write) => this.#publish(write)))
    this.#cleanups.push(port.onClose(() => this.destroy()))
    this.#cleanups.push(tracker.subscribe(() => this.#reportStatus()))
    this.#cleanups.push(
      tracker.onRejectedUpdate((rejected) => {
        const message = rejected.error instanceof Error ? rejected.error.message : String(rejected.error)
        port.reportAnomaly('invalid_remote_cell', `peer update of ${rejected.bytes} bytes could not be applied: ${message}`)
      }),
    )
    // What first contact wrote (this replica's state, pending until a provider takes it) shows at once.
    this.#reportStatus()
  }

  mismatches(): readonly ConfigurationMismatchError[] {
    return [...this.#mismatches.values()]
  }

  destroy(): void {
    if (this.#destroyed) return
    this.#destroyed = true
    for (const cleanup of this.#cleanups.splice(0)) cleanup()
  }

  /** First contact: judge every replica the doc lists, merge what it holds, publish our state. */
  #start(): void {
    const own = this.#port.replicaId
    const ownMatches = this.#ownMeta.holds(this.#meta.get(own))
    const groups: CellGroup[] = []
    const clocks: ClockEntry[] = []
    for (const replicaId of [...this.#meta.keys()]) {
      if (replicaId === own) continue
      const log = this.#judge(replicaId)
      if (log?.status === 'accepted') this.#collect(log, log.reread(), groups, clocks)
    }
    // Entries of an earlier session of this replica are ours to merge back, when they share our configuration.
    this.#own.status = 'accepted'
    const previous = this.#own.reread()
    if (ownMatches) {
      this.#collect(this.#own, previous, groups, clocks)
      for (const read of previous) if (read.kind === 'clock') this.#ownSources.add(read.entry.source)
    }
    this.#merge(groups, clocks)
    if (!this.#writes) return

    this.#doc.transact(() => {
      if (!ownMatches) {
        const write = emptyWrite()
        this.#own.clear(write)
        this.#ownMeta.write()
        this.#own.commit(write)
      }
      // Once durable here (a batch ingested just before binding may not be yet), before any later
      // write; in this same transaction when it already is.
      this.#port.exportDurableState((state) => this.#publishState(state, ownMatches ? previous : []), { writer: this.#port.replicaId })
    }, this.#origin)
  }

  /**
   * This replica's whole state (the sources it writes, as exported for its id) into its log. The
   * cells `previous` (what the log held at bind) lists and the engine no longer holds are
   * retired: their windows left live state while no doc was bound, so no write expired them.
   */
  #publishState(state: ReplicaState, previous: readonly ReadEntry[]): void {
    const { cells, clocks } = state
    this.#publish({ cells, clocks, expired: droppedSince(previous, cells, new Set(clocks.map((clock) => clock.source))) })
  }

  #publish(write: LocalWrite): void {
    if (this.#destroyed || !this.#writes) return
    try {
      this.#doc.transact(() => {
        const own = emptyWrite()
        for (const cell of write.cells) this.#own.putCell(cell, own)
        for (const clock of write.clocks) this.#own.putClock(clock, own)
        for (const clock of write.clocks) if (clock.writer === this.#port.replicaId) this.#ownSources.add(clock.source)
        for (const address of write.expired) this.#own.expire(address, own)
        this.#own.commit(own)
        // An earlier session of this replica's sources (another replica id: a reloaded tab, a
        // reclaimed source) never expires what it left behind, so this one retires it; entries
        // of sources it does not write are their writers' to retire (a relay refuses the rest).
        const expired = write.expired.filter((address) => this.#ownSources.has(address.source))
        for (const log of this.#logs.values()) {
          if (log === this.#own || expired.length === 0) continue
          const theirs: LogWrite = emptyWrite()
          for (const address of expired) log.expire(address, theirs)
          log.commit(theirs)
        }
      }, this.#origin)
    } catch (error) {
      this.#fail(error)
    }
  }

  readonly #afterTransaction = (tr: Y.Transaction): void => {
    if (tr.origin === this.#origin || this.#destroyed) return
    const batch = this.#batch
    this.#batch = emptyBatch()
    try {
      this.#mergeBatch(batch)
    } catch (error) {
      this.#fail(error)
    }
  }

  #mergeBatch(batch: RemoteBatch): void {
    // A transaction that changed nothing of the schema (another binding's on this doc, an app's):
    // nothing to merge, and no transaction of this binding's in answer, which that other binding
    // would answer in turn, without end.
    if (batch.metaKeys.size === 0 && batch.added.size === 0 && batch.removed.size === 0) return
    const own = this.#port.replicaId
    // Before anything of this batch is written back: a session that gives its replica up deletes nothing of the keeper's.
    if (batch.metaKeys.has(own) && this.#writes) this.#answer()
    const groups: CellGroup[] = []
    const clocks: ClockEntry[] = []
    const reread = new Set<ReplicaEntries>()
    // Read before this binding's own transactions below; entries of sessions of another configuration set apart.
    const added = new Map<ReplicaEntries, unknown[]>()
    let earlier: unknown[] = []
    for (const [log, items] of batch.added) {
      // With a meta entry of another configuration for this replica, all that came to its log.
      const own = log === this.#own && batch.foreignOwnMeta
      const [kept, skipped] = contentOf(items, own ? undefined : this.#foreignSessions.of(log.replicaId))
      if (log === this.#own) earlier = own ? kept : skipped
      if (!own) added.set(log, kept)
    }
    if (earlier.length > 0 && this.#writes) {
      // An earlier session of this replica under another configuration (a device that came back
      // reconfigured, its room's state arriving after bind): its cells fit no window here and its
      // clocks would make its events duplicates, so its entries leave the log this one starts
      // afresh, whether they come with its meta entry or after it.
      const write = emptyWrite()
      for (const raw of earlier) write.doomed.add(raw as DocEntry)
      this.#doc.transact(() => this.#own.commit(write), this.#origin)
    }
    // One transaction for every log opened here: each `getArray` of a new name runs one, and Yjs
    // cleans up those started after a transaction's end recursively, one stack frame each.
    this.#doc.transact(() => {
      for (const replicaId of batch.metaKeys) {
        if (replicaId === own) {
          if (this.#writes) this.#ownMeta.repair()
          continue
        }
        const before = this.#logs.get(replicaId)?.status
        const log = this.#judge(replicaId)
        if (log === undefined || log.status !== 'accepted' || before === 'accepted') continue
        // Newly accepted: its whole log, including what this very transaction brought.
        this.#collect(log, log.reread(this.#foreignSessions.of(replicaId)), groups, clocks)
        reread.add(log)
      }
      // Replicas refused for `maxReplicas` are judged again once a slot is free (a replica that
      // left no trace): their meta entries may never change again.
      for (const replicaId of this.#overflowed) {
        if (this.#logs.size >= this.#maxReplicas && !this.#forgetGhost()) break
        this.#overflowed.delete(replicaId)
        const log = this.#judge(replicaId)
        if (log === undefined || log.status !== 'accepted') continue
        this.#collect(log, log.reread(this.#foreignSessions.of(replicaId)), groups, clocks)
        reread.add(log)
      }
    }, this.#origin)
    for (const [log, items] of batch.added) if (log.status === 'mismatch') this.#foreignSessions.add(log.replicaId, items.map((item) => item.id.client))
    for (const [log, raws] of batch.removed) {
      if (log.status === 'accepted' && !reread.has(log)) for (const raw of contentOf(raws)[0]) log.forget(raw)
    }
    for (const [log, raws] of added) {
      if (log.status !== 'accepted' || reread.has(log)) continue
      this.#collect(
        log,
        raws.map((raw) => log.read(raw)),
        groups,
        clocks,
      )
    }
    this.#merge(groups, clocks)
    // Entries this session wrote, deleted while a session of another configuration contests the replica (it
    // takes them for an earlier one's): its whole state goes into its log again, not its meta entry alone. A
    // twin of this session's configuration, alone, deletes only what it supersedes or retires.
    if (this.#writes && this.#ownMeta.contestedLately && lostEntries(batch.removed.get(this.#own), this.#doc.clientID)) this.#port.exportDurableState((state) => this.#publishState(state, []), { writer: this.#port.replicaId })
  }

  /** Sorts read entries into the merge batch and reports the invalid ones. */
  #collect(log: ReplicaEntries, entries: readonly ReadEntry[], groups: CellGroup[], clocks: ClockEntry[]): void {
    for (const read of entries) {
      if (read.kind === 'group') groups.push(read.entry)
      else if (read.kind === 'clock') {
        clocks.push(read.entry)
        this.#writers.note(read.entry)
      } else {
        this.#port.reportAnomaly('invalid_remote_cell', `replica ${preview(log.replicaId)}: ${read.detail}`)
      }
    }
  }

  #merge(groups: readonly CellGroup[], clocks: readonly ClockEntry[]): void {
    if (groups.length === 0 && clocks.length === 0) return
    this.#port.mergeRemoteGroups(groups, clocks)
  }

  /** Opens (and observes) a replica's log; `undefined` when the doc cannot hold it. */
  #openLog(replicaId: string): ReplicaEntries | undefined {
    const known = this.#logs.get(replicaId)
    if (known !== undefined) return known
    let array: Y.Array<DocEntry>
    try {
      array = this.#doc.getArray<DocEntry>(replicaArrayName(replicaId))
    } catch (error) {
      // The name is taken by a type of another kind (a peer or the app wrote something else there).
      this.#port.reportAnomaly('invalid_remote_cell', `replica ${preview(replicaId)}: log is not an array (${String(error)})`)
      return undefined
    }
    const log = new ReplicaEntries(replicaId, array)
    const observer = (event: Y.YArrayEvent<DocEntry>, tr: Y.Transaction): void => {
      if (tr.origin === this.#origin) return
      const { added, deleted } = event.changes
      if (added.size > 0) append(this.#batch.added, log, added)
      if (deleted.size > 0) append(this.#batch.removed, log, deleted)
    }
    array.observe(observer)
    const stop = (): void => array.unobserve(observer)
    this.#cleanups.push(stop)
    this.#stops.set(replicaId, stop)
    this.#logs.set(replicaId, log)
    return log
  }

  /**
   * Forgets one replica that left no trace (its meta entry deleted, its log empty), so that it
   * no longer counts against `maxReplicas`; false when there is none.
   */
  #forgetGhost(): boolean {
    for (const [replicaId, log] of this.#logs) {
      if (replicaId === this.#port.replicaId || this.#meta.has(replicaId) || log.array.length > 0) continue
      this.#stops.get(replicaId)?.()
      this.#stops.delete(replicaId)
      this.#logs.delete(replicaId)
      this.#mismatches.delete(replicaId)
      this.#foreignSessions.forget(replicaId)
      return true
    }
    return false
  }

  /** Reads a replica's meta entry and decides whether its log is merged. */
  #judge(replicaId: string): ReplicaEntries | undefined {
    if (replicaId.length === 0 || replicaId.length > MAX_NAME_LENGTH) {
      this.#port.reportAnomaly('invalid_remote_cell', `replica id ${preview(replicaId)} is not a valid name`)
      return undefined
    }
    if (!this.#logs.has(replicaId) && this.#logs.size >= this.#maxReplicas && !this.#forgetGhost()) {
      this.#port.reportAnomaly('invalid_remote_cell', `more than ${this.#maxReplicas} replicas; ${preview(replicaId)} ignored`)
      this.#overflowed.add(replicaId)
      return undefined
    }
    const log = this.#openLog(replicaId)
    if (log === undefined) return undefined
    const raw = this.#meta.get(replicaId)
    if (raw === undefined) {
      // Its meta entry was deleted: keep what was merged, merge nothing new until it returns.
      log.status = 'unknown'
      return log
    }
    if (this.#ownMeta.holds(raw)) {
      log.status = 'accepted'
      this.#mismatches.delete(replicaId)
      return log
    }
    const meta = readMeta(raw)
    const received = meta?.configuration ?? null
    const previous = this.#mismatches.get(replicaId)
    log.status = 'mismatch'
    this.#foreignSessions.add(replicaId, log.writers())
    if (previous === undefined || previous.received !== received) {
      const detail = meta === null ? 'malformed meta entry' : meta.schema !== DOC_SCHEMA ? `doc schema ${meta.schema}, expected ${DOC_SCHEMA}` : undefined
      const error = new ConfigurationMismatchError(replicaId, this.#port.configuration, received, detail)
      this.#mismatches.set(replicaId, error)
      this.#onError(error)
    }
    return log
  }

  /** Whether this binding writes: not a reader, and its engine has not given its replica up to another live session (`OwnMeta`). */
  get #writes(): boolean {
    return !this.#readOnly && !this.#ownMeta.gaveUp
  }

  /** Another live session of this replica id answered this one's repairs of its meta entry twice (`OwnMeta`): this engine gives the replica up, writes nothing more to any doc, and reports why. */
  #answer(): void {
    const error = this.#ownMeta.answered()
    if (error === null) return
    this.#mismatches.set(this.#port.replicaId, error)
    this.#onError(error)
  }

  #measure(force: boolean): void {
    const now = this.#now()
    if (!force && now - this.#measuredAt < this.#measureEvery) return
    this.#measuredAt = now
    this.#docBytes = Y.encodeStateAsUpdate(this.#doc).byteLength
    this.#reportStatus()
  }

  #reportStatus(): void {
    if (this.#destroyed) return
    this.#status.report(syncStatusTracker(this.#doc).status(), this.#docBytes)
  }

  #fail(error: unknown): void {
    this.#onError(error instanceof Error ? error : new Error(String(error)))
  }
}
