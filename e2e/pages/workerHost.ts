/**
 * The worker e2e app's host worker: the file the pages start as a SharedWorker, or as a leader
 * tab's dedicated Worker where there is none. One engine for every tab, its log in IndexedDB,
 * and, when the page names a sync server, one Yjs document on one websocket.
 */
import { tumbling } from '@tidemark/engine'
import { hostEngine } from '@tidemark/worker/host'
import { bindDoc } from '@tidemark/yjs'
import { connectWebsocket } from '@tidemark/yjs/websocket'
import * as Y from 'yjs'
import { WORKER_ENGINE_NAME, WORKER_LATENESS_MS, WORKER_ROOM, WORKER_WINDOW_MS, type WorkerPageConfig } from './workerConfig.ts'

hostEngine({
  name: WORKER_ENGINE_NAME,
  // Every window stays live, so a page's digest covers every reading.
  engine: { windows: tumbling(WORKER_WINDOW_MS), allowedLateness: WORKER_LATENESS_MS, retention: 1e12 },
  log: { checkpointEvery: { events: 5_000 } },
  setup({ engine, config }) {
    const { syncUrl } = config as WorkerPageConfig
    if (syncUrl === null) return undefined
    const doc = new Y.Doc()
    const binding = bindDoc(engine, doc)
    const socket = connectWebsocket(doc, { url: syncUrl, room: WORKER_ROOM })
    return () => {
      socket.destroy()
      binding.destroy()
    }
  },
  commands: {
    // The host's own view of the engine, past the page's mirror.
    applied: (_payload, { engine }) => engine.stats().applied,
  },
})
