import { claimSource } from '@tidemark/idb'
import { EngineProvider, useSyncStatus, useWindows } from '@tidemark/react'
import { connectEngine, type RemoteEngine } from '@tidemark/worker'
import { createRoot } from 'react-dom/client'
import type { FleetConfig } from './fleet.worker.ts'

// #region connect
/** Every page of the app, dashboard or device, connects to the one engine of the origin. */
export function connectFleet(config: FleetConfig): Promise<RemoteEngine> {
  return connectEngine({
    name: 'fleet',
    // Written here, in the app, so Vite finds the worker file and emits it (no plugin, no blob: URL).
    shared: (name) => new SharedWorker(new URL('./fleet.worker.ts', import.meta.url), { type: 'module', name }),
    dedicated: (name) => new Worker(new URL('./fleet.worker.ts', import.meta.url), { type: 'module', name }),
    config,
  })
}
// #endregion connect

// #region dashboard
function Minutes() {
  const rows = useWindows({ window: 'tumbling:60000' })
  const { state } = useSyncStatus()
  return (
    <section data-sync={state}>
      {rows.map((r) => (
        <p key={`${r.key}@${r.start}`}>
          {r.key} {new Date(r.start).toISOString()} {r.mean.toFixed(1)} ({r.status})
        </p>
      ))}
    </section>
  )
}

/** The hooks read the page's mirror of the hosted engine, synchronously, as they read an engine. */
export async function showDashboard(element: HTMLElement, config: FleetConfig): Promise<void> {
  const engine = await connectFleet(config)
  createRoot(element).render(
    <EngineProvider engine={engine}>
      <Minutes />
    </EngineProvider>,
  )
}
// #endregion dashboard

// #region device
/** A device tab writes its own source into the shared engine; `ingest` resolves to the receipt. */
export async function recordReadings(engine: RemoteEngine, read: () => number): Promise<() => void> {
  // The source id is still the tab's own (a Web Lock per source); only its log is the origin's now.
  const claim = await claimSource({ prefix: 'sensor' })
  let seq = (await engine.nextSeq(claim.source)) - 1
  const timer = setInterval(async () => {
    seq += 1
    const receipt = await engine.ingest([{ id: `${claim.source}-${seq}`, source: claim.source, seq, ts: Date.now(), key: 'temp', value: read() }])
    await receipt.durable // in the host's log: survives this tab, and a takeover
  }, 1_000)
  return () => {
    clearInterval(timer)
    void claim.release()
  }
}
// #endregion device
