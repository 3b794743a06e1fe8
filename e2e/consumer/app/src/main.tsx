/**
 * A device and its dashboard in one tab, written only against the published packages:
 * the tab claims a source, opens an engine over IndexedDB, shares its state with the other
 * tabs through a Yjs doc on a BroadcastChannel, and renders the windows with a hook.
 */
import { tumbling } from '@tidemark/engine'
import { claimSource, indexedDbPersistence, openEngine } from '@tidemark/idb'
import { EngineProvider } from '@tidemark/react'
import { BroadcastChannelProvider, bindDoc } from '@tidemark/yjs'
import { createRoot } from 'react-dom/client'
import * as Y from 'yjs'
import { Dashboard } from './Dashboard'
import { DeviceControls } from './DeviceControls'

async function start(): Promise<void> {
  const claim = await claimSource({ prefix: 'tab' })
  const engine = await openEngine({
    windows: tumbling(60_000),
    persistence: indexedDbPersistence({ name: `consumer-${claim.source}`, claim }),
  })
  // What IndexedDB alone gave back: read before any peer is connected.
  const recovered = engine.replica.exportState().clocks.find((clock) => clock.source === claim.source)?.prefix ?? 0
  const doc = new Y.Doc()
  bindDoc(engine, doc)
  new BroadcastChannelProvider(doc, 'tidemark-consumer')

  const root = document.getElementById('root')
  if (root === null) throw new Error('index.html has no #root')
  createRoot(root).render(
    <EngineProvider engine={engine}>
      <DeviceControls engine={engine} source={claim.source} recovered={recovered} />
      <Dashboard />
    </EngineProvider>,
  )
}

start().catch((error: unknown) => {
  console.error(error)
  document.body.textContent = `failed: ${error instanceof Error ? error.message : String(error)}`
})
