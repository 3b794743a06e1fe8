/**
 * Updates that depend on updates not in the room yet (sent later on the same connection, or lost
 * by a restarted relay and sent again by the client's sync step 2): held per connection, each
 * checked again once the room's document has every state it waits for, then applied in order as
 * Hocuspocus would have applied it.
 */
import type { Connection, Document } from '@hocuspocus/server'
import * as Y from 'yjs'
import { authorizeUpdate, type StateNeed } from '../authorize/authorizeUpdate.ts'
import type { RelayMetrics } from '../metrics/relayMetrics.ts'
import { Refusal } from '../protocol/refusal.ts'
import type { RoomSizes } from '../rooms/roomSizes.ts'
import type { ConnectionGate, HeldUpdate } from './connectionGate.ts'
import { applyAsHocuspocus, docVersion } from './hocuspocusSteps.ts'

/** Updates one connection may have held (each changed document is checked against each of them). */
export const MAX_HELD_UPDATES = 1024

/**
 * The held updates of a relay's connections, counted across them.
 *
 * @example
 * const held = new HeldUpdates({ metrics, sizes, maxHeldBytes: 4 << 20 })
 * const refusal = held.hold(gate, payload, SYNC_STEP.update, verdict.needs, verdict.detail) // null: held
 * held.release(gate, connection, document, (client) => presence.heldByAnother(document, gate, client))
 */
export class HeldUpdates {
  readonly #metrics: RelayMetrics
  readonly #sizes: RoomSizes
  readonly #maxHeldBytes: number
  #count = 0

  constructor(deps: { readonly metrics: RelayMetrics; readonly sizes: RoomSizes; readonly maxHeldBytes: number }) {
    this.#metrics = deps.metrics
    this.#sizes = deps.sizes
    this.#maxHeldBytes = deps.maxHeldBytes
  }

  /** Updates currently held, across connections. */
  get count(): number {
    return this.#count
  }

  /**
   * Holds `payload` (which waits for `needs`) for `gate`'s connection; a `missing-origin`
   * refusal, with `detail`, when the connection holds as many bytes or updates as it may.
   */
  hold(gate: ConnectionGate, payload: Uint8Array, step: number, needs: readonly StateNeed[], detail: string): Refusal | null {
    if (gate.heldBytes + payload.byteLength > this.#maxHeldBytes || gate.held.length >= MAX_HELD_UPDATES) return new Refusal('missing-origin', detail)
    gate.held.push({ payload: payload.slice(), step, needs, met: 0 })
    gate.heldBytes += payload.byteLength
    this.#count++
    this.#metrics.updatesHeld++
    return null
  }

  /** Lets go of every update `gate`'s connection holds (refused, expired or closed). */
  drop(gate: ConnectionGate): void {
    this.#count -= gate.dropHeld()
  }

  /**
   * Applies `gate`'s held updates that have become applicable, in order, as Hocuspocus would
   * have; a refusal when one never can be. `presentElsewhere` says whether a client id is another
   * live connection's presence in the room (what `authorizeUpdate` refuses to let `gate` write under).
   */
  release(gate: ConnectionGate, connection: Connection, document: Document, presentElsewhere: (client: number) => boolean): Refusal | null {
    if (gate.held.length === 0 || gate.ended || document.isDestroyed || !document.hasConnection(connection)) return null
    // Nothing changed since the last look: every held update still waits (a message that changes
    // nothing must not cost a check of every held byte).
    if (gate.heldVersion === docVersion(document)) return null
    let progress = true
    while (progress && gate.held.length > 0) {
      progress = false
      for (let i = 0; i < gate.held.length; i++) {
        const held = gate.held[i] as HeldUpdate
        while (held.met < held.needs.length && Y.getState(document.store, (held.needs[held.met] as StateNeed).client) >= (held.needs[held.met] as StateNeed).clock) held.met++
        if (held.met < held.needs.length) continue
        const verdict = authorizeUpdate(document, held.payload, gate.grant, presentElsewhere)
        if (!verdict.ok && verdict.missing) {
          // Its needs were met, so this cannot happen; were it to, it must not be checked again at every message.
          if (verdict.needs.every(({ client, clock }) => Y.getState(document.store, client) >= clock)) return new Refusal('missing-origin', verdict.detail)
          held.needs = verdict.needs
          held.met = 0
          continue
        }
        gate.held.splice(i, 1)
        gate.heldBytes -= held.payload.byteLength
        this.#count--
        i--
        if (!verdict.ok) return verdict.refusal
        if (!this.#sizes.admits(gate.roomName, document, held.payload.byteLength)) return new Refusal('room-too-large')
        applyAsHocuspocus(connection, document, held.payload)
        this.#metrics.updatesIn++
        progress = true
      }
    }
    gate.heldVersion = docVersion(document)
    return null
  }
}
