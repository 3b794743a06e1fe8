import { syncStatusTracker } from '@tidemark/yjs'
import * as Y from 'yjs'
import { DocLinks } from './docLinks.ts'
import type { FleetWiring } from './fleetWiring.ts'

/**
 * The dashboard's copy of one device's document. It joins the device's tab channel and
 * room like any peer, and forwards every update it receives into the dashboard's document,
 * where the dashboard engine's binding validates and merges it.
 *
 * Why a copy per device rather than the dashboard document in every room: a provider sends
 * every update of its document, so one document in many rooms would relay each device's
 * state into every other device's room, and every device would merge the whole fleet.
 * With a copy per device, updates flow device → dashboard only.
 *
 * @example
 * const doc = new Y.Doc()
 * const dashboard = createEngine({ windows: tumbling(2_000), doc })
 * const mirror = new DeviceMirror('d01', doc, wiring, 'w2000-l10000', Date.now)
 * mirror.lastSync() // when d01's state last arrived
 */
export class DeviceMirror {
  readonly device: string
  readonly #doc = new Y.Doc()
  readonly #links: DocLinks
  readonly #forward: (update: Uint8Array) => void

  constructor(device: string, target: Y.Doc, wiring: FleetWiring, epoch: string, now: () => number) {
    this.device = device
    syncStatusTracker(this.#doc, { now })
    this.#forward = (update) => Y.applyUpdate(target, update, this)
    this.#doc.on('update', this.#forward)
    this.#links = new DocLinks(this.#doc, wiring, epoch, device)
  }

  /** When this copy last synced with the device or received an update from it (the mirror's sync status). */
  lastSync(): number | null {
    return syncStatusTracker(this.#doc).status().lastSync
  }

  destroy(): void {
    this.#links.destroy()
    this.#doc.off('update', this.#forward)
    syncStatusTracker(this.#doc).destroy()
    this.#doc.destroy()
  }
}
