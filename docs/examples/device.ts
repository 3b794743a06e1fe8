import { type Engine, tickWhenDue } from '@tidemark/engine'
import { claimSource, indexedDbPersistence, openEngine, recoveryReport } from '@tidemark/idb'
import { BroadcastChannelProvider, bindDoc, connectRelay, type RelayToken } from '@tidemark/yjs'
import * as Y from 'yjs'
import { FLEET, fleetOptions } from './fleet.ts'

/** A running device: it records readings and keeps them until they reached the relay. */
export interface Device {
  readonly engine: Engine
  /** This tab's source id. */
  readonly source: string
  /** Records one reading taken now; resolves once it is durable on this device. */
  record(key: string, value: number): Promise<void>
  close(): Promise<void>
}

/** `tokenFor(source, replica)`: the relay token of this tab's source and engine replica, e.g. `devDeviceToken` of examples/server.ts. */
export async function startDevice(relayUrl: string, tokenFor: (source: string, replica: string) => RelayToken): Promise<Device> {
  // #region open
  // A source id for this tab alone, held with a Web Lock and reused after a reload.
  const claim = await claimSource({ prefix: 'sensor' })
  // The engine over a write-ahead log in IndexedDB: it first recovers what the last session logged.
  const persistence = indexedDbPersistence({ name: `tidemark-${claim.source}`, claim })
  const engine = await openEngine({ ...fleetOptions, persistence })
  const report = recoveryReport(engine)
  if (report !== undefined && (report.lostEvents > 0 || report.lossUnknown)) {
    console.warn(`recovery lost ${report.lostEvents} readings`, report.corrupt)
  }
  // #endregion open

  // #region replicate
  // The engine's cells go into this device's room on the relay (bound after recovery, so merges
  // are logged too). The room's doc holds this device alone: the relay refuses anything else.
  const room = new Y.Doc()
  bindDoc(engine, room, { onError: (error) => console.warn(error.message) })
  const relay = connectRelay({ url: relayUrl, token: tokenFor(claim.source, engine.replica.replicaId), jitter: { initialMs: 2_000 } })
  relay.join(room, `${FLEET}/${claim.source}`)
  // The other tabs of this origin share a doc of their own, with no server.
  const shared = new Y.Doc()
  bindDoc(engine, shared, { onError: (error) => console.warn(error.message) })
  const tabs = new BroadcastChannelProvider(shared, `tidemark:${FLEET}`)
  // #endregion replicate

  // #region record
  // Sources fall silent: tick when one turns idle, even when nothing is ingested, and only
  // then. It stops when the engine closes.
  tickWhenDue(engine)

  async function record(key: string, value: number): Promise<void> {
    // Gap-free sequence numbers let every replica prove windows complete. The next one follows
    // every seq the engine took, those it recovered from the log included, so a crash leaves no
    // gap; a record lost to damage keeps its seqs taken (reused, they would be duplicates).
    const seq = engine.nextSeq(claim.source)
    const receipt = engine.ingest([{ id: `${claim.source}-${seq}`, source: claim.source, seq, ts: Date.now(), key, value }])
    for (const anomaly of receipt.anomalies) console.warn(anomaly.reason, anomaly.detail)
    await receipt.durable // committed to IndexedDB: survives a crash, a reload, going offline
  }
  // #endregion record

  // #region close
  async function close(): Promise<void> {
    tabs.destroy()
    relay.destroy()
    await engine.close() // writes a last checkpoint and detaches the docs
    await claim.release()
  }
  // #endregion close

  return { engine, source: claim.source, record, close }
}
