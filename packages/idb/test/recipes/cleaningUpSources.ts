/**
 * The code samples of docs/recipes/cleaning-up-sources.md, typechecked here. Each region
 * between `// #region` and `// #endregion` is one `ts` block of the recipe, word for word
 * (indentation aside): the docs test (docs/test/examples.test.ts) checks that, and
 * recipes.test.ts runs the samples.
 */
import type { Engine } from '@tidemark/engine'
import type { SourceClaim } from '@tidemark/idb'
// #region imports
import { deleteSource, listSources } from '@tidemark/idb'
// #endregion

/** Lists the origin's sources. */
export async function describeSources(): Promise<string[]> {
  // #region list
  const lines: string[] = []
  for (const { source, held, registered, finished, lastClaimed } of await listSources({ prefix: 'dashboard' })) {
    const when = lastClaimed === 0 ? 'never claimed' : `last claimed ${new Date(lastClaimed).toISOString()}`
    const state = held ? 'open in a tab' : finished ? 'finished, to delete' : 'free'
    lines.push(`${source}: ${state}, ${registered ? when : 'not in the registry'}`)
  }
  // #endregion
  return lines
}

/** Deletes the free sources the server has everything of. */
export async function cleanUp(claim: SourceClaim, serverHasEverythingFrom: (source: string) => Promise<boolean>): Promise<string[]> {
  const deleted: string[] = []
  // #region delete
  for (const { source, held } of await listSources({ prefix: 'dashboard' })) {
    if (held || source === claim.source) continue // a tab is writing it
    if (!(await serverHasEverythingFrom(source))) continue // its log still holds data the server lacks
    try {
      await deleteSource(source, { prefix: 'dashboard' })
      deleted.push(source)
    } catch (error) {
      // Taken by a tab since listSources, or still open in this page: try again later.
      console.warn((error as Error).message)
    }
  }
  // #endregion
  return deleted
}

/** Retires this tab's device for good: its source is finished, and the tab waits for the relay before it closes. */
export async function retireDevice(engine: Engine, claim: SourceClaim): Promise<void> {
  // #region retire
  await engine.finishSource(claim.source) // durable: from here on, no tab session is handed this source
  // Keep the tab open until the relay has acknowledged everything, the finish included.
  await new Promise<void>((resolve, reject) => {
    const poll = setInterval(() => {
      const { state, pendingLocalUpdates, refusal } = engine.syncStatus()
      if (refusal === null && (state !== 'connected' || pendingLocalUpdates > 0)) return
      clearInterval(poll)
      if (refusal === null) resolve()
      else reject(new Error(`the relay refused ${claim.source}: ${refusal}`))
    }, 1_000)
  })
  await engine.close()
  await claim.release() // its database stays until deleteSource
  // #endregion
}
