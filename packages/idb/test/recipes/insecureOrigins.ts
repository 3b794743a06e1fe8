/**
 * The code samples of docs/recipes/insecure-origins.md, typechecked here. Each region between
 * `// #region` and `// #endregion` is one `ts` block of the recipe, word for word
 * (indentation aside): the docs test (docs/test/examples.test.ts) checks that, and
 * recipes.test.ts runs the samples.
 */
import type { SourceClaim } from '@tidemark/idb'
import type { Screen } from './screen.ts'
// #region imports
import { claimSource } from '@tidemark/idb'
// #endregion

/** Never a blank page: shows why the claim failed. */
export async function claimOrExplain(screen: Screen): Promise<SourceClaim | null> {
  // #region explain
  try {
    return await claimSource({ prefix: 'dashboard' })
  } catch (error) {
    // On http://192.168.1.20:5173 this names the cause (not a secure context) and the fixes.
    screen.error = (error as Error).message
    return null
  }
  // #endregion
}

/** Opts into the single-tab fallback where there are no Web Locks, and says so. */
export async function claimSingleTab(screen: Screen): Promise<SourceClaim> {
  // #region single-tab
  const claim = await claimSource({ prefix: 'dashboard', withoutLocks: 'single-tab' })
  if (!claim.exclusive) {
    screen.banner = 'Keep this page open in one tab only: without Web Locks, two tabs would write the same source.'
  }
  // #endregion
  return claim
}
