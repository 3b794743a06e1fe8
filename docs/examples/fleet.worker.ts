// #region host
// src/fleet.worker.ts: the app's worker file. Every tab's connectEngine starts this same file,
// as a SharedWorker where there is one, else as a leader tab's dedicated Worker.
import { tickWhenDue } from '@tidemark/engine'
import { hostEngine } from '@tidemark/worker/host'
import { bindDoc, connectRelay } from '@tidemark/yjs'
import * as Y from 'yjs'
import { fleetOptions } from './fleet.ts'

/** What the pages pass the host (`connectEngine({ config })`): the first tab's is used. */
export interface FleetConfig {
  /** The relay (`ws://…`), where this device's relay token is fetched, and its room `<fleet>/<device>`. */
  readonly relayUrl: string
  readonly tokenUrl: string
  readonly room: string
}

hostEngine({
  name: 'fleet',
  engine: fleetOptions,
  // The log is IndexedDB's `tidemark-log-fleet`, written by this host alone (default `log: {}`).
  setup({ engine, config }) {
    // One doc and one socket for the whole origin, however many tabs are open.
    const { relayUrl, tokenUrl, room } = config as FleetConfig
    const doc = new Y.Doc()
    const binding = bindDoc(engine, doc)
    // Fetched for every join: the relay closes the room when a token reaches its exp, and the
    // client joins again with a fresh one. It names this engine's replica id (random, kept in
    // the origin's log), the one replica the token must let it write.
    const token = async (): Promise<string> => {
      const url = new URL(tokenUrl, location.href)
      url.searchParams.set('replica', engine.replica.replicaId)
      const response = await fetch(url, { credentials: 'include' })
      if (!response.ok) throw new Error(`no relay token: HTTP ${response.status}`)
      return ((await response.json()) as { token: string }).token
    }
    const relay = connectRelay({ url: relayUrl, token, jitter: { initialMs: 2_000 } })
    relay.join(doc, room)
    // A tick when a silent device turns idle or a trigger is due, not one (and a log record) a second.
    const stopTicks = tickWhenDue(engine)
    return () => {
      stopTicks()
      relay.destroy()
      binding.destroy()
    }
  },
})
// #endregion host
