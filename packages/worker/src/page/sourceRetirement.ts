/**
 * A tab's source claim on a page whose engine a worker hosts: the host's log, not the page's,
 * holds the finish of the claim's source, so the page retires the claim (`SourceClaim.retire`
 * of `@tidemark/idb`: never handed out again) once the host says that finish is durable. And
 * since the tab that finished it may have gone between the host's commit and that answer, every
 * host the page connects to says whether its engine holds a finish of the claim's source
 * (`welcome.finished`), and says it later (`finished`) when a finish merged from a peer reaches
 * it; the page then finishes it again, which resolves once that finish is durable, and retires
 * the claim.
 */
import { reportError } from '../common/reportError.ts'

/**
 * The tab's source claim as `connectEngine` takes it: what `claimSource` of `@tidemark/idb`
 * returns, or anything with its `source` and `retire()`.
 *
 * @example
 * const claim: WorkerSourceClaim = await claimSource({ prefix: 'dashboard' })
 */
export interface WorkerSourceClaim {
  /** The source this tab writes. */
  readonly source: string
  /** Retires the source for good: no later tab session is handed it. */
  retire(): void
}

/**
 * Resolves once `finishing`, a finish of `source` sent to the host, did; retires `claim` first
 * when `source` is the claim's. A `retire` that throws is reported, not thrown: the finish is
 * durable all the same.
 *
 * @example
 * await retireWhenFinished(claim, source, callHost({ op: 'finish', source }))
 */
export async function retireWhenFinished(claim: WorkerSourceClaim | undefined, source: string, finishing: Promise<unknown>): Promise<void> {
  await finishing
  if (claim === undefined || claim.source !== source) return
  try {
    claim.retire()
  } catch (error) {
    reportError(error)
  }
}

/**
 * On a host's welcome saying its engine holds a finish of the claim's source: a tab that finished
 * it went away between the host's commit and its answer, and left the retirement to this one.
 * Finishing again resolves once that finish is durable (and writes its record again if it
 * failed); then the claim is retired. A finish the host refuses is reported; the next host's
 * welcome tries again. Once the page `ended()` (closed, or no host can serve it), nobody awaits
 * the finish and its rejection (`the remote engine is closed`) is not reported: the next page
 * given the source finishes it again.
 *
 * @example
 * if (welcome.finished === true) retireFinishedClaim(claim, (source) => engine.finishSource(source), () => closed)
 */
export function retireFinishedClaim(claim: WorkerSourceClaim | undefined, finish: (source: string) => Promise<void>, ended: () => boolean): void {
  if (claim === undefined) return
  finish(claim.source).catch((error: unknown) => {
    if (!ended()) reportError(error)
  })
}

/**
 * Checks `connectEngine`'s `claim` option.
 *
 * @example
 * checkClaim(await claimSource({ prefix: 'dashboard' })) // passes
 * checkClaim({ source: 'd1' }) // TypeError: it has no retire()
 */
export function checkClaim(claim: unknown): void {
  const { source, retire } = (typeof claim === 'object' && claim !== null ? claim : {}) as Partial<WorkerSourceClaim>
  if (typeof source !== 'string' || source.length === 0 || typeof retire !== 'function') {
    throw new TypeError('connectEngine: claim must be a source claim of claimSource (with a source and a retire())')
  }
}
