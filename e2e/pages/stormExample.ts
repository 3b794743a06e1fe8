import { tumbling } from '@tidemark/engine'
import { indexedDbPersistence, openEngine } from '@tidemark/idb'
import { beginStormPage } from '@tidemark/storm/page'
import { bindDoc, connectRelay, followRooms } from '@tidemark/yjs'
import * as Y from 'yjs'

// First thing: start recording offline/online events, read role, server, room and seed.
const storm = beginStormPage()
// The test names each page's source and hands it a relay token for it (see the test below).
const source = storm.params.get('source') ?? ''

async function open(): Promise<void> {
  const engine = await openEngine({
    windows: tumbling(1_000),
    allowedLateness: 2_000,
    retention: 1e12, // keep every window while the driver compares totals
    replicaId: source, // the replica its token may write
    persistence: indexedDbPersistence({ name: `example-${source}` }),
  })
  const relay = connectRelay({ url: storm.query.server, token: storm.params.get('token') ?? '' })
  if (storm.query.role === 'device') {
    // A device writes its own room on the relay.
    const doc = new Y.Doc()
    bindDoc(engine, doc, { onError: (error) => storm.error(`replication: ${error.message}`) })
    relay.join(doc, `${storm.query.room}/${source}`)
  } else {
    // A dashboard follows every room of the storm, read-only.
    followRooms(engine, relay, { directory: `${storm.query.room}/_directory` })
  }
  // Follow the browser's network signal: an open socket can outlive a real drop for minutes.
  addEventListener('offline', () => relay.disconnect())
  addEventListener('online', () => relay.connect())
  if (!navigator.onLine) relay.disconnect()
  storm.ready({
    engine,
    source,
    async close() {
      relay.destroy()
      await engine.close()
    },
  })
}

open().catch((error: unknown) => storm.failed(error))
