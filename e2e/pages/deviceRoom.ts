/**
 * A storm device's room on the relay: its engine bound to a `Y.Doc` joined to `<room>/<source>`.
 * When the relay refuses an update of the doc (a hostile write), that doc can never sync again
 * (its Yjs clocks have a gap no relay fills): the room reports the refusal and starts over with
 * a new doc bound to the engine, which publishes the engine's state into it. A refused
 * authentication (a bad token) is reported and left as it is: a new doc would be refused too.
 */
import type { Engine } from '@tidemark/engine'
import { bindDoc, type DocBinding, type Relay, type RelayRoomHandle, syncStatusTracker } from '@tidemark/yjs'
import * as Y from 'yjs'

/** Docs one room may start over with before it gives up (a relay that refuses whatever the engine writes). */
const MAX_FRESH_DOCS = 10

/** The refusal of an update, as the relay client reports it; other refusals are authentication. */
const UPDATE_REFUSAL = 'tidemark:refused '

/**
 * @example
 * const room = new DeviceRoom(engine, relay, 'storm-7/storm-device-7x0', { onError, onRefused: (reason) => log(reason) })
 * room.doc // the doc joined now (a hostile command writes into it)
 */
export class DeviceRoom {
  readonly #engine: Engine
  readonly #relay: Relay
  readonly #room: string
  readonly #onError: (message: string) => void
  readonly #onRefused: (reason: string) => void
  #doc!: Y.Doc
  #binding!: DocBinding
  #handle!: RelayRoomHandle
  #stopTracking: () => void = () => {}
  #fresh = 0
  #destroyed = false

  constructor(engine: Engine, relay: Relay, room: string, hooks: { readonly onError: (message: string) => void; readonly onRefused: (reason: string) => void }) {
    this.#engine = engine
    this.#relay = relay
    this.#room = room
    this.#onError = hooks.onError
    this.#onRefused = hooks.onRefused
    this.#open()
  }

  /** The doc joined to the room now. */
  get doc(): Y.Doc {
    return this.#doc
  }

  destroy(): void {
    this.#destroyed = true
    this.#close()
  }

  #open(): void {
    const doc = new Y.Doc()
    this.#doc = doc
    this.#binding = bindDoc(this.#engine, doc, { onError: (error) => this.#onError(`replication: ${error.message}`) })
    this.#handle = this.#relay.join(doc, this.#room)
    let reported: string | null = null
    this.#stopTracking = syncStatusTracker(doc).subscribe(({ refusal }) => {
      if (refusal === null || refusal === reported || doc !== this.#doc) return
      reported = refusal
      this.#onRefused(refusal)
      if (!refusal.startsWith(UPDATE_REFUSAL)) return
      // Not inside the tracker's own notification: the doc is replaced once it is done.
      queueMicrotask(() => this.#startOver(doc))
    })
  }

  #startOver(refused: Y.Doc): void {
    if (this.#destroyed || refused !== this.#doc) return
    if (++this.#fresh > MAX_FRESH_DOCS) {
      this.#onError(`the relay refused ${MAX_FRESH_DOCS} fresh docs of ${this.#room} in a row; giving up`)
      return
    }
    this.#close()
    this.#open()
  }

  #close(): void {
    this.#stopTracking()
    this.#handle.destroy()
    this.#binding.destroy()
    syncStatusTracker(this.#doc).destroy()
    this.#doc.destroy()
  }
}
