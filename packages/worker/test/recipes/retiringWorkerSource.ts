/**
 * The worker sample of docs/recipes/cleaning-up-sources.md, typechecked here. The region
 * between `// #region` and `// #endregion` is one `ts` block of the recipe, word for word
 * (indentation aside): the docs test (docs/test/examples.test.ts) checks that.
 */
import { claimSource } from '@tidemark/idb'
import { type ConnectEngineOptions, connectEngine } from '../../src/index.ts'

/** Retires this tab's source for good, its engine in a worker. */
export async function retireWorkerSource(shared: NonNullable<ConnectEngineOptions['shared']>, dedicated: ConnectEngineOptions['dedicated']): Promise<void> {
  // #region retire
  const claim = await claimSource({ prefix: 'dashboard' })
  const engine = await connectEngine({ name: 'fleet', shared, dedicated, claim })
  await engine.finishSource(claim.source) // the claim is retired when this resolves
  // #endregion
  await engine.close()
  await claim.release()
}
