/**
 * The code samples of docs/recipes/cleaning-up-sources.md, typechecked here. Each region
 * between `// #region` and `// #endregion` is one `ts` block of the recipe, word for word
 * (indentation aside): the docs test (docs/test/examples.test.ts) checks that, and
 * recipes.test.ts runs the samples.
 */
import type { SourceClaim } from '@tidemark/idb'
// #region imports
import { deleteSource, listSources } from '@tidemark/idb'
// #endregion

/** Lists the origin's sources. */
export async function describeSources(): Promise<string[]> {
  // #region list
  const lines: string[] = []
  for (const { source, held, registered, lastClaimed } of await listSources({ prefix: 'dashboard' })) {
    const when = lastClaimed === 0 ? 'never claimed' : `last claimed ${new Date(lastClaimed).toISOString()}`
    lines.push(`${source}: ${held ? 'open in a tab' : 'free'}, ${registered ? when : 'not in the registry'}`)
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
