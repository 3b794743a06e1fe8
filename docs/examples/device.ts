import type { Engine } from '@tidemark/engine'
import { claimSource, indexedDbPersistence, openEngine, recoveryReport } from '@tidemark/idb'
import { BroadcastChannelProvider, bindDoc, connectWebsocket } from '@tidemark/yjs'
import * as Y from 'yjs'
import { FLEET_ROOM, fleetOptions } from './fleet.ts'

/** A running device: it records readings and keeps them until they reached the server. */
export interface Device {
  readonly engine: Engine
  /** This tab's source id. */
  readonly source: string
  /** Records one reading taken now; resolves once it is durable on this device. */
  record(key: string, value: number): Promise<void>
  close(): Promise<void>
}

export async function startDevice(serverUrl: string): Promise<Device> {
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
  // The engine's cells go into a Y.Doc (bound after recovery, so merges are logged too),
  // which other tabs reach over a BroadcastChannel and other devices through the server.
  const doc = new Y.Doc()
  bindDoc(engine, doc, { onError: (error) => console.warn(error.message) })
  const tabs = new BroadcastChannelProvider(doc, `tidemark:${FLEET_ROOM}`)
  const server = connectWebsocket(doc, { url: serverUrl, room: FLEET_ROOM, jitter: { initialMs: 2_000 } })
  // #endregion replicate

  // #region record
  // Gap-free sequence numbers let every replica prove windows complete; continue after the
  // last seq the log holds, so a crash leaves no gap.
  const clock = engine.replica.exportState().clocks.find((entry) => entry.source === claim.source)
  let seq = clock?.prefix ?? 0
  // Sources fall silent: re-check idleness even when nothing is ingested.
  const ticking = setInterval(() => engine.tick(), 1_000)

  async function record(key: string, value: number): Promise<void> {
    seq += 1
    const receipt = engine.ingest([{ id: `${claim.source}-${seq}`, source: claim.source, seq, ts: Date.now(), key, value }])
    for (const anomaly of receipt.anomalies) console.warn(anomaly.reason, anomaly.detail)
    await receipt.durable // committed to IndexedDB: survives a crash, a reload, going offline
  }
  // #endregion record

  // #region close
  async function close(): Promise<void> {
    clearInterval(ticking)
    tabs.destroy()
    server.destroy()
    await engine.close() // writes a last checkpoint and detaches the doc
    await claim.release()
  }
  // #endregion close

  return { engine, source: claim.source, record, close }
}
