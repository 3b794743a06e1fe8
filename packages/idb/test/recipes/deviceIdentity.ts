/**
 * The code samples of docs/recipes/device-identity.md, typechecked here. Each region between
 * `// #region` and `// #endregion` is one `ts` block of the recipe, word for word
 * (indentation aside): the docs test (docs/test/examples.test.ts) checks that, and
 * recipes.test.ts runs the samples.
 */
import type { Engine } from '@tidemark/engine'
import type { SourceClaim } from '@tidemark/idb'
import type { Screen } from './screen.ts'
// #region imports
import { tumbling } from '@tidemark/engine'
import { claimSource, indexedDbPersistence, openEngine } from '@tidemark/idb'
import { BroadcastChannelProvider, bindDoc, connectRelay } from '@tidemark/yjs'
import * as Y from 'yjs'
// #endregion

/** Claims the tab's source, opens its log, resumes its seq. */
export async function openDashboard(): Promise<{ claim: SourceClaim; engine: Engine; record: (key: string, value: number) => void }> {
  // #region open
  const claim = await claimSource({ prefix: 'dashboard' })
  const engine = await openEngine({
    windows: tumbling(60_000),
    persistence: indexedDbPersistence({ name: claim.database, claim }),
  })
  claim.lost.then(() => engine.close()) // another context took the source: stop writing at once

  // Where this source's numbering stands after a reload or a takeover (1 for a new source).
  let seq = engine.nextSeq(claim.source)
  function record(key: string, value: number): void {
    const id = `${claim.source}-${seq}`
    engine.ingest([{ id, source: claim.source, seq: seq++, ts: Date.now(), key, value }])
  }
  // #endregion
  return { claim, engine, record }
}

/** A JWT for this tab's relay room (from the application's login); read on every connection. */
async function fetchToken(): Promise<string> {
  return 'a JWT for the room fleet-a/<source>'
}

/** Shares the state and tells the user what has not reached anyone yet. */
export function shareState(engine: Engine, source: string, screen: Screen): void {
  // #region offline
  const tabs = new Y.Doc() // the other tabs of this origin
  bindDoc(engine, tabs)
  new BroadcastChannelProvider(tabs, 'dashboard')
  const room = new Y.Doc() // this source's room on the relay: its replica alone
  bindDoc(engine, room)
  connectRelay({ url: 'wss://relay.example.com', token: fetchToken }).join(room, `fleet-a/${source}`)

  engine.subscribe(() => {
    const { state, pendingLocalUpdates } = engine.syncStatus()
    screen.banner = state === 'connected' ? '' : `${pendingLocalUpdates} updates not shared yet (${state})`
  })
  // #endregion
}
