/**
 * The Hocuspocus extension that loads rooms from the room store, queues what clients change for
 * it, compacts, keeps idle rooms for a while, and lists device rooms in their fleet's directory.
 *
 * No hook here rejects except `onLoadDocument`, and it destroys the half-made document first:
 * in Hocuspocus 3.4 a rejecting `onChange` or `onStoreDocument` ends the process (an unhandled
 * rejection) or pins the document in memory, and a failed load that is not destroyed leaks the
 * document and its awareness timer.
 */
import {
  type afterUnloadDocumentPayload,
  type beforeUnloadDocumentPayload,
  Connection,
  type Extension,
  type onChangePayload,
  type onLoadDocumentPayload,
  type onStoreDocumentPayload,
} from '@hocuspocus/server'
import * as Y from 'yjs'
import type { FleetDirectory } from '../directory/fleetDirectory.ts'
import type { RelayMetrics } from '../metrics/relayMetrics.ts'
import { OpenRefused, Refusal } from '../protocol/refusal.ts'
import { describeError, type RelayLog } from '../relayLog.ts'
import type { IdleRooms } from '../rooms/idleRooms.ts'
import { classifyRoom } from '../rooms/roomName.ts'
import type { RoomSizes } from '../rooms/roomSizes.ts'
import type { RelayedUpdates } from './relayedUpdates.ts'
import type { RoomStore } from './roomStore.ts'
import { applyStoredParts, type StoredPart } from './storedParts.ts'

/** The origin of a room's load transaction: not a client's change, so not stored again. */
const LOAD_ORIGIN: object = Object.freeze({ tidemark: 'load' })

/** Thrown by `beforeUnloadDocument` to keep a room loaded; empty, so Hocuspocus logs nothing. */
class KeepLoaded extends Error {
  constructor() {
    super('')
  }
}

/**
 * Room persistence as a Hocuspocus extension.
 *
 * @example
 * const persistence = new RoomPersistence({ store, sizes, idle, metrics, log })
 * const hocuspocus = new Hocuspocus({ extensions: [persistence] })
 * persistence.attachDirectory(new FleetDirectory(hocuspocus, Date.now, log))
 */
export class RoomPersistence implements Extension {
  readonly extensionName = 'TidemarkRoomPersistence'
  /** Before the Redis extension (1000), whose unload delay then runs only for rooms really unloading. */
  readonly priority = 2000
  readonly #store: RoomStore
  readonly #sizes: RoomSizes
  readonly #idle: IdleRooms
  readonly #metrics: RelayMetrics
  readonly #log: RelayLog
  readonly #relayed: RelayedUpdates | undefined
  readonly #copiesOrigin: string | undefined
  #directory: FleetDirectory | undefined
  #closing = false
  /** The documents of the rooms loaded here (a compaction on a store of this relay alone snapshots them). */
  readonly #documents = new Map<string, Y.Doc>()

  /**
   * `relayed` (with Redis, on a store the relays may share): where the other relays' changes wait
   * for them to say they stored them. `copiesOrigin` (with Redis, on a store of this relay alone):
   * the origin of the other relays' updates, which the store keeps as copies (`appendCopy`).
   */
  constructor(deps: {
    readonly store: RoomStore
    readonly sizes: RoomSizes
    readonly idle: IdleRooms
    readonly metrics: RelayMetrics
    readonly log: RelayLog
    readonly relayed?: RelayedUpdates
    readonly copiesOrigin?: string
  }) {
    this.#store = deps.store
    this.#relayed = deps.relayed
    this.#copiesOrigin = deps.copiesOrigin
    this.#sizes = deps.sizes
    deps.store.onCompacted = (room, snapshotBytes) => {
      // A room that unloaded meanwhile keeps no size.
      if (deps.sizes.has(room)) deps.sizes.set(room, snapshotBytes)
      deps.log('info', `compacted ${room}: snapshot ${snapshotBytes} bytes`)
    }
    deps.store.roomState = (room) => {
      const document = this.#documents.get(room)
      return document === undefined || document.isDestroyed ? undefined : Y.encodeStateAsUpdate(document)
    }
    this.#idle = deps.idle
    this.#metrics = deps.metrics
    this.#log = deps.log
  }

  /** The directory device rooms are listed in. */
  attachDirectory(directory: FleetDirectory): void {
    this.#directory = directory
  }

  /** The relay is shutting down: rooms unload without waiting, the shutdown stores them. */
  closing(): void {
    this.#closing = true
    // Whatever the other relays have not said they stored is this relay's to store now.
    this.#relayed?.releaseAll()
  }

  async onLoadDocument({ document, documentName }: onLoadDocumentPayload): Promise<void> {
    let parts: StoredPart[]
    let unstored: Uint8Array[]
    try {
      // Updates the room took before it last unloaded and the store has not written yet (or
      // was writing while the read ran): not in what the read returns. Other relays' changes
      // held here too: their relay may not have stored them yet (or ever, if it died).
      const before = [...this.#store.unstored(documentName), ...(this.#relayed?.held(documentName) ?? [])]
      parts = await this.#store.load(documentName)
      unstored = [...before, ...this.#store.unstored(documentName)]
      // Each part on its own: one that Yjs cannot use is set aside, and the room opens with the rest.
      const aside = applyStoredParts(document, parts, LOAD_ORIGIN)
      await this.#store.setAside(documentName, aside)
      if (aside.length > 0) parts = parts.filter((part) => !aside.some((a) => a.part === part))
      // Applied under the load's origin: they stay queued, and are written once.
      for (const update of unstored) Y.applyUpdate(document, update, LOAD_ORIGIN)
    } catch (error) {
      this.#metrics.loadFailures++
      this.#metrics.refused('store-unavailable')
      this.#log('error', `loading ${documentName} failed: ${describeError(error)}`)
      document.destroy()
      // Hocuspocus runs no unload for a refused load: what the store read of it goes here.
      this.forget(documentName, false)
      throw new OpenRefused(new Refusal('store-unavailable', 'the room could not be loaded'))
    }
    this.#sizes.set(documentName, parts.reduce((n, part) => n + part.bytes.byteLength, 0) + unstored.reduce((n, update) => n + update.byteLength, 0))
    // Every row the store read or will write of the room is applied to it from here on.
    this.#documents.set(documentName, document)
    document.on('destroy', () => {
      if (this.#documents.get(documentName) === document) this.#documents.delete(documentName)
    })
    if (parts.length > 0 || unstored.length > 0) this.#listInDirectory(documentName)
  }

  async onChange({ transactionOrigin, documentName, update, document }: onChangePayload): Promise<void> {
    try {
      this.#sizes.add(documentName, update.byteLength)
      // Sent to every connection but the one it came from (UpdateFanOut).
      this.#metrics.updatesOut += document.getConnections().length - (transactionOrigin instanceof Connection ? 1 : 0)
      // Everything this relay holds is stored through it too, except what it loaded from the
      // store: its clients' updates, the directory's, and those relayed through Redis (the relay
      // their client sent them to may die inside its write window, and its clients, moving here,
      // would not send again what this relay already holds). On a shared database another relay's
      // changes wait for it to say it stored them (`RelayedUpdates`), and are written here only if
      // it does not; what relays sharing a database both write, the store keeps once (rows are
      // keyed by digest). On a store of this relay alone they are copies, written merged.
      if (transactionOrigin === LOAD_ORIGIN || this.#relayed?.took(update) === true) return
      if (this.#copiesOrigin !== undefined && transactionOrigin === this.#copiesOrigin) {
        this.#store.appendCopy(documentName, update)
        return
      }
      this.#store.append(documentName, update)
      if (transactionOrigin instanceof Connection) this.#listInDirectory(documentName)
    } catch (error) {
      // Hocuspocus does not await onChange: a rejection here would be unhandled.
      this.#log('error', `queueing an update of ${documentName} for the store failed: ${describeError(error)}`)
    }
  }

  /**
   * Hocuspocus' debounced store: a compaction check. Writing is the store's own (its write
   * window), so a relay killed without warning loses at most that window.
   */
  async onStoreDocument({ documentName }: onStoreDocumentPayload): Promise<void> {
    if (!this.#store.needsCompaction(documentName)) return
    try {
      await this.#compact(documentName)
    } catch (error) {
      // Rejecting here would end the process; the next store tries again.
      this.#log('warn', `compacting ${documentName} failed: ${describeError(error)}`)
    }
  }

  async beforeUnloadDocument({ documentName }: beforeUnloadDocumentPayload): Promise<void> {
    if (this.#closing) return
    if (this.#idle.holds(documentName)) throw new KeepLoaded()
    try {
      await this.#store.flush()
      if (this.#store.hasRows(documentName)) await this.#compact(documentName)
    } catch (error) {
      if (this.#store.hasPending(documentName)) {
        // Its updates are not stored yet: keep it in memory and try again later.
        this.#log('warn', `keeping ${documentName} loaded: its updates are not stored yet (${describeError(error)})`)
        this.#idle.retryLater(documentName)
        throw new KeepLoaded()
      }
      this.#log('warn', `compacting ${documentName} before unloading failed: ${describeError(error)}`)
    }
  }

  async afterUnloadDocument({ documentName }: afterUnloadDocumentPayload): Promise<void> {
    this.forget(documentName)
  }

  /**
   * Drops what the relay keeps per loaded room (size, store tail, idle time, directory listing):
   * after an unload, and after a load that a later extension refused (Redis could not subscribe
   * it), for which Hocuspocus runs no unload. `unloaded` false: its load failed here.
   */
  forget(room: string, unloaded = true): void {
    this.#documents.delete(room)
    this.#sizes.forget(room)
    this.#store.forget(room)
    this.#idle.forget(room)
    this.#directory?.forget(room, unloaded)
  }

  async #compact(room: string): Promise<void> {
    await this.#store.compact(room)
  }

  #listInDirectory(room: string): void {
    const directory = this.#directory
    // Called on every change a client writes: a room already listed needs no name parsed.
    if (directory === undefined || directory.isListed(room)) return
    const kind = classifyRoom(room)
    if (kind.kind === 'device') directory.list(room, kind.fleet)
  }
}
