/**
 * What an app writes against the browser packages, typechecked by peerFloor.ts with the lowest
 * versions their peerDependencies allow (React and its types, zustand, Yjs, y-protocols,
 * Playwright). Never run: only its types are checked.
 */
import { tumbling } from '@tidemark/engine'
import { claimSource, indexedDbPersistence, openEngine } from '@tidemark/idb'
import { createEngineStore, EngineProvider, useEngineStats, useLateEvents, useSyncStatus, useWatermark, useWindow, useWindowHistory, useWindows } from '@tidemark/react'
import { connectEngine } from '@tidemark/worker'
import { BroadcastChannelProvider, bindDoc, connectRelay, followRooms } from '@tidemark/yjs'
import type { ReactElement } from 'react'
import * as Y from 'yjs'
import { useStore } from 'zustand'

export async function device(): Promise<ReactElement> {
  const claim = await claimSource({ prefix: 'tab' })
  const engine = await openEngine({ windows: tumbling(60_000), persistence: indexedDbPersistence({ name: claim.source, claim }) })
  const doc = new Y.Doc()
  bindDoc(engine, doc)
  new BroadcastChannelProvider(doc, 'tidemark-floor')
  const relay = connectRelay({ url: 'ws://127.0.0.1:1234', token: () => 'token' })
  relay.join(doc, 'fleet-a/d07')
  followRooms(engine, relay, { directory: 'fleet-a/_directory' })
  const remote = await connectEngine({
    name: 'fleet',
    shared: (name) => new SharedWorker(new URL('./worker.ts', import.meta.url), { type: 'module', name }),
    dedicated: (name) => new Worker(new URL('./worker.ts', import.meta.url), { type: 'module', name }),
  })
  const store = createEngineStore(remote)
  return (
    <EngineProvider engine={remote}>
      <Panel store={store} />
    </EngineProvider>
  )
}

function Panel({ store }: { readonly store: ReturnType<typeof createEngineStore> }): ReactElement {
  const windows = useWindows()
  const one = useWindow('tumbling:60000', 'temp', 0)
  const history = useWindowHistory('tumbling:60000', 'temp', 0)
  const late = useLateEvents((events) => events.length)
  const applied = useEngineStats((stats) => stats.applied)
  const sync = useSyncStatus((status) => status.state)
  const watermark = useWatermark()
  const corrections = useStore(store, (state) => state.stats.corrections)
  return <p>{[windows.length, one?.count, history.length, late, applied, sync, watermark, corrections].join(' ')}</p>
}
