import { tumbling } from '@tidemark/engine'
import { claimSource, indexedDbPersistence, openEngine } from '@tidemark/idb'
import { beginStormPage } from '@tidemark/storm/page'
import { bindDoc } from '@tidemark/yjs'
import { connectWebsocket } from '@tidemark/yjs/websocket'
import * as Y from 'yjs'

// First thing: start recording offline/online events, read role, server, room and seed.
const storm = beginStormPage()

async function open(): Promise<void> {
  const claim = await claimSource({ prefix: `example-${storm.query.role}` })
  const engine = await openEngine({
    windows: tumbling(1_000),
    allowedLateness: 2_000,
    retention: 1e12, // keep every window while the driver compares totals
    persistence: indexedDbPersistence({ name: `example-${claim.source}`, claim }),
  })
  const doc = new Y.Doc()
  bindDoc(engine, doc, { onError: (error) => storm.error(`replication: ${error.message}`) })
  const connection = connectWebsocket(doc, { url: storm.query.server, room: storm.query.room })
  connection.provider.on('status', ({ status }: { status: string }) => storm.syncStatus(status))
  // Follow the browser's network signal: an open socket can outlive a real drop for minutes.
  addEventListener('offline', () => connection.provider.disconnect())
  addEventListener('online', () => connection.provider.connect())
  if (!navigator.onLine) connection.provider.disconnect()
  storm.ready({
    engine,
    source: claim.source,
    async close() {
      connection.destroy()
      await engine.close()
    },
  })
}

open().catch((error: unknown) => storm.failed(error))
