/** Opening storm pages, reading them, and waiting until they agree. */
import type { BrowserContext, Page } from '@playwright/test'
import type { StormPageApi, StormSnapshot, StormStatusChange, StormTransition } from '../pages/stormApi.ts'

export interface StormPage {
  readonly context: BrowserContext
  readonly page: Page
  readonly source: string
}

/**
 * Opens `url` in a new page of `context` and waits until it exposes `window.storm` (its
 * engine recovered); throws with the page's own error when it failed to open. Expose
 * `stormReport` on the context first (`StormLedger.listen`).
 *
 * @example
 * const device = await openStormPage(context, `${baseURL}/storm.html?role=device&server=${url}&room=r1&seed=7`)
 */
export async function openStormPage(context: BrowserContext, url: string): Promise<StormPage> {
  const page = await context.newPage()
  page.on('pageerror', (error) => console.error(`storm page error: ${error.message}`))
  await page.goto(url)
  return { context, page, source: await stormReady(page) }
}

/**
 * Waits until a (re)loaded page exposes `window.storm`; returns its source.
 *
 * @example
 * await device.page.reload()
 * await stormReady(device.page)
 */
export async function stormReady(page: Page): Promise<string> {
  await page.waitForFunction(() => window.storm !== undefined || window.stormError !== undefined)
  const failure = await page.evaluate(() => window.stormError)
  if (failure !== undefined) throw new Error(`storm page failed to open: ${failure}`)
  return page.evaluate(() => (window.storm as StormPageApi).source)
}

/**
 * The page's current figures (window digest, counts, late lane, sync state, errors).
 *
 * @example
 * expect((await snapshotOf(dashboard.page)).errors).toEqual([])
 */
export function snapshotOf(page: Page): Promise<StormSnapshot> {
  return page.evaluate(() => (window.storm as StormPageApi).snapshot())
}

/**
 * Every offline/online event the page saw.
 *
 * @example
 * const seen = await transitionsOf(device.page) // [{ at: 1764410000123, online: false }, ...]
 */
export function transitionsOf(page: Page): Promise<readonly StormTransition[]> {
  return page.evaluate(() => (window.storm as StormPageApi).transitions())
}

/**
 * Every status change of the page's websocket connection (connecting, connected, disconnected).
 *
 * @example
 * const reconnected = (await statusChangesOf(dashboard.page)).find((c) => c.status === 'connected' && c.at > restartedAt)
 */
export function statusChangesOf(page: Page): Promise<readonly StormStatusChange[]> {
  return page.evaluate(() => (window.storm as StormPageApi).statusChanges())
}

/**
 * Polls every page (every 250 ms) until all show the same window values and `done(snapshots)`
 * holds, or `timeoutMs` passes; `convergedAt` is when the agreeing snapshots had all been
 * read (an upper bound: the pages agreed at or before it).
 *
 * @example
 * const { converged, snapshots } = await waitForConvergence(pages, 30_000, (s) => s[0]?.digest === truth.digest)
 */
export async function waitForConvergence(
  pages: readonly Page[],
  timeoutMs: number,
  done: (snapshots: readonly StormSnapshot[]) => boolean = () => true,
): Promise<{ converged: boolean; convergedAt: number; snapshots: StormSnapshot[] }> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const snapshots = await Promise.all(pages.map(snapshotOf))
    const readAt = Date.now()
    const first = snapshots[0]?.digest
    if (snapshots.every((s) => s.digest === first) && done(snapshots)) return { converged: true, convergedAt: readAt, snapshots }
    if (Date.now() > deadline) return { converged: false, convergedAt: Number.NaN, snapshots }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}
