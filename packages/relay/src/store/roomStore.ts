/**
 * Durable rooms: per room a compacted snapshot plus the updates accepted since.
 *
 *   tidemark_relay_updates   (seq, room, bytes, digest)  one row per distinct accepted update
 *   tidemark_relay_snapshots (room, version, bytes)      the room's state when last compacted
 *
 * Accepted updates are written in batches, at most `writeWindowMs` after the first of a batch
 * arrived: a relay killed without warning loses at most that window, which the devices' own
 * write-ahead logs cover (their next sync step 2 re-sends what the relay lacks). A room loads
 * as its snapshot plus its update rows. Compaction folds a room's rows into a new snapshot,
 * through a Y.Doc so superseded entries are garbage-collected, and deletes exactly the rows it
 * folded, in one transaction guarded by the snapshot's version: relays sharing one PostgreSQL
 * never lose each other's rows; on PGlite a loaded room is snapshotted from its document
 * instead (roomCompaction.ts). Stored bytes then plateau under a steady stream of writes.
 * Update rows are keyed by room and digest, so relays sharing a database store each update
 * once (updateRows.ts).
 */
import * as Y from 'yjs'
import type { RelayMetrics, StoreOperation } from '../metrics/relayMetrics.ts'
import { describeError, type RelayLog } from '../relayLog.ts'
import { GLOBAL_TIMERS, type RelayTimers } from '../relayOptions.ts'
import type { SqlClient } from './sqlClient.ts'
import { copiesWindowMs, RelayedCopies } from './relayedCopies.ts'
import { compactFromRows, compactFromState } from './roomCompaction.ts'
import { StoreUpkeep } from './storeUpkeep.ts'
import { RoomReads } from './roomReads.ts'
import { moveAside, type SetAsidePart, type StoredPart } from './storedParts.ts'
import { createUpdateTables, insertUpdates, roomHash, updateRows } from './updateRows.ts'

/**
 * When the store writes and compacts.
 *
 * @example
 * const timing: RoomStoreTiming = { writeWindowMs: 500, compactAfterRows: 256, compactAfterBytes: 16_384 }
 */
export interface RoomStoreTiming {
  /** Accepted updates are written at most this long after the first of a batch arrived. */
  readonly writeWindowMs: number
  /** A room is compacted once it has this many update rows… */
  readonly compactAfterRows: number
  /** …or update bytes past both this and its snapshot's size. */
  readonly compactAfterBytes: number
}

/**
 * Observes the store's writes of queued updates: every update queued before `begin()` returned
 * is in that write or an earlier one, and stored once `stored` is called with what it returned.
 *
 * @example
 * store.writeMarks = { begin: () => ++writes, stored: (k) => console.log(`write ${k} stored`) }
 */
export interface StoreWriteMarks {
  begin(): number
  stored(mark: number): void
}

/** What the store knows of a room's rows. */
interface RoomTail {
  rows: number
  bytes: number
  snapshotBytes: number
  /** The highest seq of the room's rows this relay read or wrote. */
  lastSeq: bigint
  /** The room's compaction thresholds are scaled by this, in [1, 1.5) (see `thresholdSpread`). */
  readonly spread: number
}

/**
 * A room's own factor on the compaction thresholds, from its name. Rooms of a fleet are written
 * at the same pace from the same moment (a relay start, a fleet's reconnect): with one
 * threshold they would all reach it in the same second, and their compactions would hold the
 * store for that long. Spread over half a threshold, they come one by one.
 */
function thresholdSpread(room: string): number {
  return 1 + (roomHash(room) % 1024) / 2048
}

const MAX_PENDING_PER_ROOM = 64

/**
 * The room store over a `SqlClient`.
 *
 * @example
 * const store = await RoomStore.open(await openPglite('.tidemark-relay'), timing, metrics, log, timers)
 * const parts = await store.load('fleet-a/d07')
 * store.append('fleet-a/d07', update)
 * await store.flush()
 */
export class RoomStore {
  readonly #sql: SqlClient
  readonly #timing: RoomStoreTiming
  readonly #metrics: RelayMetrics
  readonly #log: RelayLog
  readonly #pending = new Map<string, Uint8Array[]>()
  readonly #tails = new Map<string, RoomTail>()
  #pendingBytes = 0
  /** Bytes of the write under way (out of `#pendingBytes` until it ends). */
  #writingBytes = 0
  /** The updates of the write under way, by room. */
  #writingBatch: ReadonlyMap<string, readonly Uint8Array[]> = new Map()
  readonly #timers: RelayTimers
  #timer: unknown
  #writing: Promise<unknown> | undefined
  #retryMs = 0
  #compactions: Promise<void> = Promise.resolve()
  /** Rooms with a compaction queued. */
  readonly #compacting = new Set<string>()
  /** Told each room's new snapshot size after a compaction. */
  onCompacted: (room: string, snapshotBytes: number) => void = () => undefined
  /**
   * Told when each write of queued updates begins (`begin` names it) and when it succeeded
   * (`stored`): the scale-out tells the other relays, which then drop the copies they hold.
   */
  writeMarks: StoreWriteMarks | undefined
  /**
   * The state of a loaded room as this relay holds it (`Y.encodeStateAsUpdate` of its document),
   * or undefined. On a store this relay alone writes (PGlite) a compaction then snapshots it
   * instead of reading the room's rows back (roomCompaction.ts).
   */
  roomState: ((room: string) => Uint8Array | undefined) | undefined
  /** Stored bytes, the health check, PGlite's vacuum and checkpoints. */
  readonly #upkeep: StoreUpkeep
  #closed = false
  /** Copies of the other relays' updates, on a store of this relay alone (`appendCopy`). */
  readonly #copies: RelayedCopies
  /** Reads of loading rooms, gathered. */
  readonly #reads: RoomReads

  private constructor(sql: SqlClient, timing: RoomStoreTiming, metrics: RelayMetrics, log: RelayLog, timers: RelayTimers) {
    this.#sql = sql
    this.#timing = timing
    this.#metrics = metrics
    this.#log = log
    this.#timers = timers
    this.#upkeep = new StoreUpkeep(sql, (op, work) => this.#timed(op, work), log)
    this.#reads = new RoomReads(sql, (work) => this.#timed('load', work))
    this.#copies = new RelayedCopies((room, update) => this.append(room, update), copiesWindowMs(timing.writeWindowMs), timers, log)
  }

  /** Creates the tables when missing. `timers`: where the write window and retries are armed (the relay's; default the global ones). */
  static async open(sql: SqlClient, timing: RoomStoreTiming, metrics: RelayMetrics, log: RelayLog, timers: RelayTimers = GLOBAL_TIMERS): Promise<RoomStore> {
    await sql.transaction(createUpdateTables)
    return new RoomStore(sql, timing, metrics, log, timers)
  }

  /** Accepted update bytes not written yet (copies waiting included). */
  get pendingBytes(): number {
    return this.#pendingBytes + this.#copies.bytes
  }

  /** Rooms the store keeps a tail for (loaded, or with updates not written yet). */
  get rooms(): number {
    return this.#tails.size
  }

  /** Accepted update bytes not stored yet: queued, or in a write that has not ended. */
  get unstoredBytes(): number {
    return this.pendingBytes + this.#writingBytes
  }

  /** True when the room has updates not written yet. */
  hasPending(room: string): boolean {
    return this.#pending.has(room) || this.#copies.has(room)
  }

  /**
   * The room's accepted updates not stored yet: in the write under way, queued, then copies
   * waiting. A room can unload with some (changes that came through Redis while its unload
   * waited) and load again before they are written: its load applies them after its stored parts.
   */
  unstored(room: string): Uint8Array[] {
    return [...(this.#writingBatch.get(room) ?? []), ...(this.#pending.get(room) ?? []), ...this.#copies.of(room)]
  }

  /**
   * The room's snapshot and updates, in the order to apply them (`applyStoredParts`). Rooms that
   * load while others are being read are read together (`RoomReads`).
   */
  async load(room: string): Promise<StoredPart[]> {
    const parts = await this.#reads.read(room)
    const tail: RoomTail = { rows: 0, bytes: 0, snapshotBytes: 0, lastSeq: 0n, spread: thresholdSpread(room) }
    for (const part of parts) {
      if (part.seq === null) tail.snapshotBytes = part.bytes.byteLength
      else {
        tail.rows++
        tail.bytes += part.bytes.byteLength
        tail.lastSeq = BigInt(part.seq)
      }
    }
    this.#tails.set(room, tail)
    return parts
  }

  /**
   * Moves parts of a room that Yjs could not use (`applyStoredParts`) out of its snapshot and
   * rows into `tidemark_relay_set_aside`, with their reasons; logged and counted. A snapshot is
   * moved only while it is the version read.
   */
  async setAside(room: string, aside: readonly SetAsidePart[]): Promise<void> {
    if (aside.length === 0) return
    await this.#sql.transaction(async (tx) => {
      await moveAside(tx, room, aside)
      const snapshot = aside.find(({ part }) => part.seq === null)?.part
      if (snapshot !== undefined) await tx.query('delete from tidemark_relay_snapshots where room = $1 and version = $2', [room, snapshot.version])
    })
    this.#noteSetAside(room, aside)
    const tail = this.#tails.get(room)
    for (const { part } of aside) {
      this.#upkeep.removed(part.bytes.byteLength)
      if (tail === undefined) continue
      if (part.seq === null) tail.snapshotBytes = 0
      else {
        tail.rows = Math.max(0, tail.rows - 1)
        tail.bytes = Math.max(0, tail.bytes - part.bytes.byteLength)
      }
    }
  }

  #noteSetAside(room: string, aside: readonly SetAsidePart[]): void {
    this.#metrics.partsSetAside += aside.length
    for (const { part, reason } of aside) {
      this.#log('warn', `room ${room}: ${part.seq === null ? `its snapshot (version ${part.version})` : `update row ${part.seq}`} set aside in tidemark_relay_set_aside: ${reason}`)
    }
  }

  /** Queues an accepted update; it is written within the write window. */
  append(room: string, update: Uint8Array): void {
    let list = this.#pending.get(room)
    if (list === undefined) {
      list = []
      this.#pending.set(room, list)
    }
    list.push(update)
    this.#pendingBytes += update.byteLength
    if (list.length > MAX_PENDING_PER_ROOM) {
      // While the store is unreachable, a room's backlog stays about as large as its state.
      const merged = Y.mergeUpdates(list)
      for (const u of list) this.#pendingBytes -= u.byteLength
      list.length = 0
      list.push(merged)
      this.#pendingBytes += merged.byteLength
    }
    if (this.#timer === undefined && this.#writing === undefined && !this.#closed) {
      this.#timer = this.#timers.setTimeout(() => this.#flushInBackground(), this.#timing.writeWindowMs)
    }
  }

  /**
   * Queues a copy of an update another relay accepted, on a store of this relay alone: written
   * merged with the room's other copies, within `copiesWindowMs(writeWindowMs)` (relayedCopies.ts).
   */
  appendCopy(room: string, update: Uint8Array): void {
    this.#copies.add(room, update)
  }

  /**
   * Writes every update queued so far, copies waiting included. Rejects when the write failed:
   * the updates stay queued and a retry is scheduled.
   */
  async flush(): Promise<void> {
    this.#copies.release()
    // One write at a time: a caller that waited re-checks, as another may have started one.
    while (this.#writing !== undefined) await this.#writing.catch(() => undefined)
    if (this.#pending.size > 0) await this.#write()
  }

  #flushInBackground(): void {
    this.#timer = undefined
    this.#write().catch(() => undefined)
  }

  async #write(): Promise<void> {
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer)
    this.#timer = undefined
    const batch = [...this.#pending]
    if (batch.length === 0) return
    this.#pending.clear()
    const bytes = this.#pendingBytes
    this.#pendingBytes = 0
    this.#writingBytes = bytes
    this.#writingBatch = new Map(batch)
    const rows = updateRows(batch)
    const mark = this.writeMarks?.begin()
    const writing = this.#timed('flush', () => this.#sql.transaction((tx) => insertUpdates(tx, rows)))
    this.#writing = writing
    try {
      const stored = await writing
      this.#retryMs = 0
      if (mark !== undefined) this.writeMarks?.stored(mark)
      this.#metrics.updatesStored += stored.length
      this.#metrics.updatesAlreadyStored += rows.length - stored.length
      const written = stored.reduce((n, row) => n + row.size, 0)
      this.#upkeep.wrote(written)
      const grown = new Set<string>()
      for (const row of stored) {
        // A room unloaded meanwhile is not tracked any more (it compacts at its next load).
        const tail = this.#tails.get(row.room)
        if (tail === undefined) continue
        tail.rows++
        tail.bytes += row.size
        const seq = BigInt(row.seq)
        if (seq > tail.lastSeq) tail.lastSeq = seq
        grown.add(row.room)
      }
      for (const room of grown) {
        // Compacting as soon as a room's rows outgrow their threshold keeps its stored bytes
        // within snapshot + threshold + one write window, however fast it is written.
        if (this.needsCompaction(room)) this.compact(room).catch((error: unknown) => this.#log('warn', `compacting ${room} failed: ${describeError(error)}`))
      }
    } catch (error) {
      // Put the batch back in front of what arrived meanwhile, and retry with a growing delay.
      const newer = [...this.#pending]
      this.#pending.clear()
      for (const [room, updates] of batch) this.#pending.set(room, updates)
      for (const [room, updates] of newer) this.#pending.set(room, [...(this.#pending.get(room) ?? []), ...updates])
      this.#pendingBytes += bytes
      this.#retryMs = Math.min(30_000, Math.max(250, this.#retryMs * 2))
      this.#log('warn', `writing ${rows.length} updates failed (retry in ${this.#retryMs} ms): ${describeError(error)}`)
      throw error
    } finally {
      this.#writing = undefined
      this.#writingBytes = 0
      this.#writingBatch = new Map()
      if (this.#pending.size > 0 && this.#timer === undefined && !this.#closed) {
        this.#timer = this.#timers.setTimeout(() => this.#flushInBackground(), this.#retryMs > 0 ? this.#retryMs : this.#timing.writeWindowMs)
      }
    }
  }

  /** True when the room's update rows warrant a compaction. */
  needsCompaction(room: string): boolean {
    const tail = this.#tails.get(room)
    if (tail === undefined || tail.rows === 0) return false
    return tail.rows >= this.#timing.compactAfterRows * tail.spread || tail.bytes >= Math.max(this.#timing.compactAfterBytes, tail.snapshotBytes) * tail.spread
  }

  /** True when the room has update rows besides its snapshot. */
  hasRows(room: string): boolean {
    return (this.#tails.get(room)?.rows ?? 0) > 0
  }

  /**
   * Compacts the room (one compaction at a time; one queued per room). Resolves with the
   * snapshot's size, or null when there was nothing to fold (or it was already queued).
   */
  compact(room: string): Promise<number | null> {
    if (this.#compacting.has(room)) return this.#compactions.then(() => null)
    this.#compacting.add(room)
    const run = this.#compactions.then(() => {
      this.#compacting.delete(room)
      return this.#timed('compact', () => this.#compact(room))
    })
    this.#compactions = run.then(
      () => undefined,
      () => undefined,
    )
    return run.then((snapshotBytes) => {
      if (snapshotBytes !== null) this.onCompacted(room, snapshotBytes)
      return snapshotBytes
    })
  }

  async #compact(room: string): Promise<number | null> {
    const tail = this.#tails.get(room)
    // A store this relay alone writes, and the room loaded: its document holds every row up to the last written (roomCompaction.ts).
    const upTo = tail?.lastSeq
    const state = this.#sql.kind === 'pglite' && tail !== undefined ? this.roomState?.(room) : undefined
    if (state !== undefined && tail?.rows === 0) return null
    const done = state === undefined ? await compactFromRows(this.#sql, room) : await compactFromState(this.#sql, room, state, upTo as bigint, tail?.snapshotBytes ?? 0)
    if (done === null) return null
    if (done.incomplete) this.#log('warn', `room ${room} has updates that depend on updates it lacks; its snapshot keeps them pending`)
    this.#noteSetAside(room, done.aside)
    this.#upkeep.removed(done.replacedBytes + done.rowBytes)
    const now = this.#tails.get(room)
    if (now !== undefined) {
      now.rows = Math.max(0, now.rows - done.rows)
      now.bytes = Math.max(0, now.bytes - done.rowBytes)
      now.snapshotBytes = done.snapshotBytes
    }
    await this.#upkeep.compacted()
    this.#upkeep.wrote(done.snapshotBytes)
    return done.snapshotBytes
  }

  /** Drops what the store knows of an unloaded room (its rows stay stored). */
  forget(room: string): void {
    this.#tails.delete(room)
  }

  /** Bytes of snapshots and updates stored (`StoreUpkeep.storedBytes`). */
  storedBytes(): Promise<number> {
    return this.#upkeep.storedBytes()
  }

  /** Resolves when the store answers a query within 2 s. */
  check(): Promise<void> {
    return this.#upkeep.check()
  }

  /** Stops writing (queued updates stay unwritten: flush first) and closes the connection. */
  async close(): Promise<void> {
    this.#closed = true
    this.#copies.stop()
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer)
    this.#timer = undefined
    await this.#writing?.catch(() => undefined)
    await this.#compactions
    await this.#upkeep.beforeClose()
    await this.#sql.close()
  }

  async #timed<T>(op: StoreOperation, work: () => Promise<T>): Promise<T> {
    const start = performance.now()
    try {
      return await work()
    } catch (error) {
      this.#metrics.storeFailed(op)
      throw error
    } finally {
      this.#metrics.timeStore(op, (performance.now() - start) / 1000)
    }
  }
}
