/**
 * The worker e2e app's host worker: the file the pages start as a SharedWorker, or as a leader
 * tab's dedicated Worker where there is none. One engine for every tab, its log in IndexedDB,
 * and, when the page names a relay, one Yjs document on one socket to it.
 */
import { tumbling } from '@tidemark/engine'
import { hostEngine } from '@tidemark/worker/host'
import { bindDoc, connectRelay } from '@tidemark/yjs'
import * as Y from 'yjs'
import { engineSnapshot } from './workerSnapshot.ts'
import { WORKER_ENGINE_NAME, WORKER_LATENESS_MS, WORKER_REPLICA, WORKER_ROOM, WORKER_WINDOW_MS, type WorkerPageConfig } from './workerConfig.ts'

hostEngine({
  name: WORKER_ENGINE_NAME,
  // Every window stays live, so a page's digest covers every reading.
  engine: { windows: tumbling(WORKER_WINDOW_MS), allowedLateness: WORKER_LATENESS_MS, retention: 1e12, replicaId: WORKER_REPLICA },
  log: { checkpointEvery: { events: 5_000 } },
  setup({ engine, config }) {
    const { relayUrl, token } = config as WorkerPageConfig
    if (relayUrl === null || token === null) return undefined
    const doc = new Y.Doc()
    const binding = bindDoc(engine, doc)
    const relay = connectRelay({ url: relayUrl, token })
    relay.join(doc, WORKER_ROOM)
    return () => {
      relay.destroy()
      binding.destroy()
    }
  },
  commands: {
    // The host's own view of the engine, past the page's mirror.
    applied: (_payload, { engine }) => engine.stats().applied,
    // The host's window values and late lane, as a page's snapshot gives its mirror's: a test that
    // finds a page's values wrong tells a host that lost them from a page that did.
    snapshot: (_payload, { engine }) => engineSnapshot(engine),
    // The host worker ends itself, as a crash ends it: its pages make the SharedWorker again.
    endHost: () => {
      setTimeout(() => (globalThis as unknown as { close(): void }).close(), 10)
      return 'ending'
    },
  },
})
