/**
 * The code samples of docs/recipes/changing-the-configuration.md, typechecked here. Each region
 * between `// #region` and `// #endregion` is one `ts` block of the recipe, word for word
 * (indentation aside): the docs test (docs/test/examples.test.ts) checks that, and
 * recipes.test.ts runs the samples (`publishTo` on a sync status the test sets).
 */
import { listSources, type SourceClaim } from '@tidemark/idb'
// #region imports
import { type Engine, type EngineOptions, tumbling } from '@tidemark/engine'
import { claimSource, deleteSource, indexedDbPersistence, openEngine } from '@tidemark/idb'
import { bindDoc, connectRelay, type RelayToken } from '@tidemark/yjs'
import * as Y from 'yjs'
// #endregion

// #region configurations
/** What the fleet counts now; every device and dashboard moves to it together. */
export const CURRENT = {
  prefix: 'sensor-v2',
  options: { windows: tumbling(60_000), allowedLateness: 15 * 60_000 } satisfies EngineOptions,
}
/** What it counted before: kept until no device's log holds anything of it that the relay lacks. */
export const PREVIOUS = {
  prefix: 'sensor',
  options: { windows: tumbling(60_000), allowedLateness: 10 * 60_000 } satisfies EngineOptions,
}
// #endregion

/** Opens this tab's engine under the current configuration. */
export async function openDevice(): Promise<{ claim: SourceClaim; engine: Engine }> {
  // #region open
  // A source of the current configuration: a new source, a new log, a new replica.
  const claim = await claimSource({ prefix: CURRENT.prefix })
  const engine = await openEngine({ ...CURRENT.options, persistence: indexedDbPersistence({ name: claim.database, claim }) })
  // #endregion
  return { claim, engine }
}

// #region drain
/**
 * Publishes what the logs of the previous configuration on this origin still hold (a device
 * offline when the new build came holds readings the relay lacks), then deletes them. Each is
 * taken over as a new tab would take it, opened under the options it was written with, handed
 * to `publish`, closed and deleted. A log an old tab still writes is left for a later run.
 */
export async function drainPrevious(publish: (engine: Engine, source: string) => Promise<void>): Promise<string[]> {
  const drained: string[] = []
  // Logs that could not be opened or published: held until the end, so the loop moves past them.
  const kept: { release(): Promise<void> }[] = []
  try {
    for (;;) {
      const claim = await claimSource({ prefix: PREVIOUS.prefix })
      if (claim.reuse === 'new') {
        // None left that no tab holds: this source was just made for the asking.
        await claim.release()
        await deleteSource(claim.source, { prefix: PREVIOUS.prefix })
        return drained
      }
      try {
        const engine = await openEngine({ ...PREVIOUS.options, persistence: indexedDbPersistence({ name: claim.database, claim }) })
        try {
          await publish(engine, claim.source)
        } finally {
          await engine.close()
        }
      } catch (error) {
        console.warn(`${claim.source} is kept for a later run: ${(error as Error).message}`)
        kept.push(claim)
        continue
      }
      await claim.release()
      await deleteSource(claim.source, { prefix: PREVIOUS.prefix })
      drained.push(claim.source)
    }
  } finally {
    for (const claim of kept) await claim.release()
  }
}
// #endregion

// #region publish
/**
 * Sends an engine's state to its source's room. Resolves once the relay acknowledged all of it
 * and the connection then stayed up `settleMs` (past the relay's write window: a relay killed
 * before it stored what it acknowledged drops the connection, and the state is sent again to the
 * next); rejects on a refusal or after `timeoutMs`.
 */
export function publishTo(relayUrl: string, fleet: string, tokenFor: (source: string, replica: string) => RelayToken, { settleMs = 5_000, timeoutMs = 120_000 } = {}) {
  return (engine: Engine, source: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const doc = new Y.Doc()
      const binding = bindDoc(engine, doc, { onError: (error) => console.warn(error.message) })
      const relay = connectRelay({ url: relayUrl, token: tokenFor(source, engine.replica.replicaId) })
      relay.join(doc, `${fleet}/${source}`)
      const started = Date.now()
      let acknowledgedAt: number | null = null
      let syncedAt: number | null = null
      const poll = setInterval(() => {
        const { state, pendingLocalUpdates, refusal, lastSync } = engine.syncStatus()
        const now = Date.now()
        // A new sync exchange (a reconnect between two polls) starts the wait over.
        const steady = state === 'connected' && pendingLocalUpdates === 0 && lastSync === syncedAt
        syncedAt = lastSync
        acknowledgedAt = steady ? (acknowledgedAt ?? now) : null
        const failed = refusal ?? (now - started > timeoutMs ? `not acknowledged for ${settleMs} ms within ${timeoutMs} ms` : null)
        if (failed === null && (acknowledgedAt === null || now - acknowledgedAt < settleMs)) return
        clearInterval(poll)
        relay.destroy()
        binding.destroy()
        if (failed === null) resolve()
        else reject(new Error(`publishing ${source}: ${failed}`))
      }, 1_000)
    })
}
// #endregion

/** What the sources of `prefix` are, as `listSources` tells them. */
export async function sourcesOf(prefix: string): Promise<string[]> {
  return (await listSources({ prefix })).map(({ source }) => source).sort()
}
