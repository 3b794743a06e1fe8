/**
 * Claims a source the test named in the page's URL: the page holds it with a Web Lock, as any
 * source it claims (`claimSource`), and fails when another tab holds it. The test named it so
 * that it could mint the page's relay token for it (its room, its replica, its source).
 */
import { claimSource, type SourceClaim } from '@tidemark/idb'

/**
 * `source` must be `${prefix}-<lowercase letters and digits>`, the names `claimSource` makes.
 *
 * @example
 * const claim = await claimNamedSource('storm-device', params.get('source'))
 */
export async function claimNamedSource(prefix: string, source: string | null): Promise<SourceClaim> {
  if (source === null || !new RegExp(`^${prefix}-[0-9a-z]+$`).test(source)) throw new Error(`the page needs a source ${prefix}-<[0-9a-z]+> in its URL, got ${JSON.stringify(source)}`)
  // Remembered as if by this tab: claimSource takes it when no other tab holds it.
  const claim = await claimSource({ prefix, storage: { getItem: () => source, setItem: () => {} }, registry: null })
  if (claim.source !== source) {
    await claim.release()
    throw new Error(`source ${source} is held by another tab`)
  }
  return claim
}
