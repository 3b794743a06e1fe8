/** Opening storm pages, reading them, and waiting until they agree: the driver's side of the page contract. */
import type { BrowserContext, Page } from '@playwright/test'
import type { StormGlobals, StormIngest, StormPageApi, StormSnapshot, StormStatusChange, StormTransition } from '../contract/stormPageApi.ts'

/**
 * One open storm page: its context, the Playwright page and the source it claimed.
 *
 * @example
 * const device: StormPage = await openStormPage(context, url)
 * await startIngest(device.page, { batch: 20, everyMs: 200 })
 */
export interface StormPage {
  readonly context: BrowserContext
  readonly page: Page
  readonly source: string
}

type ApiMethod = Exclude<keyof StormPageApi, 'source' | 'role'>

/** Calls `method` of the page's `StormPageApi` in the page; rejects when the page is not ready (wait for `stormReady` first). */
function callPage(page: Page, method: ApiMethod, args: readonly unknown[] = []): Promise<unknown> {
  return page.evaluate(
    ([name, values]) => {
      const storm = (globalThis as StormGlobals).tidemarkStorm
      if (storm === undefined) throw new Error(`storm page: tidemarkStorm is not set (the page has not called ready(), or failed); cannot call ${name}`)
      return (storm[name] as (...values: unknown[]) => unknown).apply(storm, [...values])
    },
    [method, args] as const,
  )
}

/**
 * Opens `url` in a new page of `context` and waits until it is ready (`stormReady`); throws
 * with the page's own error when it failed to open. Expose the report binding on the context
 * first (`StormLedger.listen`).
 *
 * @example
 * const device = await openStormPage(context, stormPageUrl(`${baseURL}/storm.html`, { role: 'device', server, room: 'r1', seed: 7 }))
 */
export async function openStormPage(context: BrowserContext, url: string): Promise<StormPage> {
  const page = await context.newPage()
  page.on('pageerror', (error) => console.error(`storm page error: ${error.message}`))
  await page.goto(url)
  return { context, page, source: await stormReady(page) }
}

/**
 * Waits until a (re)loaded page published its `StormPageApi`; returns its source, or throws
 * with the reason the page published instead.
 *
 * @example
 * await device.page.reload()
 * await stormReady(device.page)
 */
export async function stormReady(page: Page): Promise<string> {
  await page.waitForFunction(() => {
    const globals = globalThis as StormGlobals
    return globals.tidemarkStorm !== undefined || globals.tidemarkStormError !== undefined
  })
  const failure = await page.evaluate(() => (globalThis as StormGlobals).tidemarkStormError)
  if (failure !== undefined) throw new Error(`storm page failed to open: ${failure}`)
  return page.evaluate(() => ((globalThis as StormGlobals).tidemarkStorm as StormPageApi).source)
}

/**
 * The page's current figures (window digest, counts, late lane, sync state, errors).
 *
 * @example
 * expect((await snapshotOf(dashboard.page)).errors).toEqual([])
 */
export function snapshotOf(page: Page): Promise<StormSnapshot> {
  return callPage(page, 'snapshot') as Promise<StormSnapshot>
}

/**
 * Every offline/online event the page saw.
 *
 * @example
 * const seen = await transitionsOf(device.page) // [{ at: 1764410000123, online: false }, ...]
 */
export function transitionsOf(page: Page): Promise<readonly StormTransition[]> {
  return callPage(page, 'transitions') as Promise<readonly StormTransition[]>
}

/**
 * Every status change of the page's sync connection, as the app reported it.
 *
 * @example
 * const reconnected = (await statusChangesOf(dashboard.page)).find((c) => c.status === 'connected' && c.at > restartedAt)
 */
export function statusChangesOf(page: Page): Promise<readonly StormStatusChange[]> {
  return callPage(page, 'statusChanges') as Promise<readonly StormStatusChange[]>
}

/**
 * Starts a device's ingest (a dashboard ignores it).
 *
 * @example
 * await startIngest(device.page, { batch: 50, everyMs: 0 })
 */
export async function startIngest(page: Page, ingest: StormIngest): Promise<void> {
  await callPage(page, 'start', [{ batch: ingest.batch, everyMs: ingest.everyMs }])
}

/**
 * Stops a device's ingest; resolves once every produced batch is durable and reported.
 *
 * @example
 * await stopIngest(device.page)
 * const stopped = await snapshotOf(device.page)
 */
export async function stopIngest(page: Page): Promise<void> {
  await callPage(page, 'stop')
}

/**
 * Runs a command the page's app registered (`StormApp.commands`) with `argument` (anything
 * Playwright can serialize); resolves with its result.
 *
 * @example
 * await stormCommand(device.page, 'writeMalformed', 20)
 */
export function stormCommand(page: Page, name: string, argument?: unknown): Promise<unknown> {
  return callPage(page, 'command', [name, argument])
}

/**
 * Stops the page's ingest and closes its app (`StormApp.close`).
 *
 * @example
 * await closeStormApp(reopened)
 */
export async function closeStormApp(page: Page): Promise<void> {
  await callPage(page, 'close')
}

/** `timeoutMs` from now; a timeout that is not a number >= 0 would poll forever (NaN) or never. */
function deadlineAfter(name: string, timeoutMs: number): number {
  if (!(timeoutMs >= 0)) throw new RangeError(`${name}: timeoutMs must be a number of ms >= 0, got ${timeoutMs}`)
  return Date.now() + timeoutMs
}

/**
 * Polls every page (every 250 ms) until each shows the window values `expected(snapshot)` names
 * for it (a device its own readings, a dashboard the whole fleet's), or `timeoutMs` passes;
 * `convergedAt` is when the matching snapshots had all been read.
 *
 * @example
 * const { converged } = await waitForTruth(pages, 30_000, (s) => (s.role === 'device' ? own.get(s.source) : fleet.digest) ?? '')
 */
export async function waitForTruth(
  pages: readonly Page[],
  timeoutMs: number,
  expected: (snapshot: StormSnapshot) => string,
): Promise<{ converged: boolean; convergedAt: number; snapshots: StormSnapshot[] }> {
  const deadline = deadlineAfter('waitForTruth', timeoutMs)
  for (;;) {
    const snapshots = await Promise.all(pages.map(snapshotOf))
    const readAt = Date.now()
    if (snapshots.every((s) => s.digest === expected(s))) return { converged: true, convergedAt: readAt, snapshots }
    if (Date.now() > deadline) return { converged: false, convergedAt: Number.NaN, snapshots }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
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
  const deadline = deadlineAfter('waitForConvergence', timeoutMs)
  for (;;) {
    const snapshots = await Promise.all(pages.map(snapshotOf))
    const readAt = Date.now()
    const first = snapshots[0]?.digest
    if (snapshots.every((s) => s.digest === first) && done(snapshots)) return { converged: true, convergedAt: readAt, snapshots }
    if (Date.now() > deadline) return { converged: false, convergedAt: Number.NaN, snapshots }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}
