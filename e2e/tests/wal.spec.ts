/**
 * The write-ahead log in real Chromium (docs/durability.md): a tab killed mid-stream and
 * reloaded offline shows every event it had acknowledged as durable; tabs of one device
 * write different sources and never touch each other's log.
 */
import { type BrowserContext, expect, type Page, test } from '@playwright/test'
import type { PageApi, PageSnapshot } from '../pages/pageApi.ts'

/** Highest durable seq per source, as the pages reported it before anything went wrong. */
async function listenForDurable(context: BrowserContext): Promise<Map<string, number>> {
  const durable = new Map<string, number>()
  await context.exposeBinding('reportDurable', (_source, name: string, seq: number) => {
    durable.set(name, Math.max(durable.get(name) ?? 0, seq))
  })
  return durable
}

/** Loads the page and waits until its engine has recovered. */
async function openTab(page: Page, path = '/'): Promise<{ source: string; report: PageApi['report'] }> {
  page.on('pageerror', (error) => console.error(`page error: ${error.message}`))
  await page.goto(path)
  await page.waitForFunction(() => window.tidemark !== undefined || window.tidemarkError !== undefined)
  const failure = await page.evaluate(() => window.tidemarkError)
  if (failure !== undefined) throw new Error(`page failed to open: ${failure}`)
  return page.evaluate(() => ({ source: window.tidemark?.source as string, report: window.tidemark?.report }))
}

/**
 * Opens the tab again as a browser restoring its session would: a new page whose
 * sessionStorage still names the source (Playwright cannot navigate a crashed page).
 */
async function restoreTab(context: BrowserContext, source: string, path = '/'): Promise<{ page: Page; source: string; report: PageApi['report'] }> {
  const page = await context.newPage()
  await page.addInitScript((name) => sessionStorage.setItem('tidemark:source:e2e', name), source)
  return { page, ...(await openTab(page, path)) }
}

function snapshot(page: Page): Promise<PageSnapshot> {
  return page.evaluate(() => (window.tidemark as PageApi).snapshot())
}

/** Kills the renderer: no unload, no engine close, IndexedDB left as the crash left it; then drops the dead tab. */
async function crash(page: Page): Promise<void> {
  const cdp = await page.context().newCDPSession(page)
  const crashed = page.waitForEvent('crash')
  // The call never answers: its renderer is gone.
  cdp.send('Page.crash').catch(() => {})
  await crashed
  await page.close()
}

test('a tab closed without warning mid-stream reloads offline and shows every durable event', async ({ context, page }) => {
  const durable = await listenForDurable(context)
  const { source } = await openTab(page, '/?checkpointEvery=5000')
  await page.evaluate(() => window.tidemark?.start({ batch: 250, everyMs: 0 }))
  // Mid-stream: batches are still being ingested and committed when the tab goes.
  await expect.poll(() => durable.get(source) ?? 0, { timeout: 30_000 }).toBeGreaterThan(20_000)
  await page.close({ runBeforeUnload: false })
  const acknowledged = durable.get(source) ?? 0

  await context.setOffline(true)
  const { page: reloaded, source: reloadedSource, report } = await restoreTab(context, source, '/?checkpointEvery=5000')
  const after = await snapshot(reloaded)
  expect(after.online).toBe(false)
  // Served by the service worker's cache: the server is out of reach.
  expect(after.controlled).toBe(true)
  expect(await reloaded.evaluate(() => window.tidemark?.probeNetwork())).toBe(false)
  // The lock went with the closed tab, so the restored tab gets its source back.
  expect(reloadedSource).toBe(source)
  expect(report?.corrupt).toEqual([])
  expect(after.sources).toBe(1)
  // Every acknowledged event is there, and nothing that was never sent.
  expect(after.applied).toBeGreaterThanOrEqual(acknowledged)
  expect(after.applied).toBeLessThan(acknowledged + 20_000)
  const again = await reloaded.evaluate((to) => window.tidemark?.reingest(1, to), acknowledged)
  expect(again).toEqual({ accepted: 0, duplicates: acknowledged })

  // Offline, ingest keeps working and stays durable across a reload.
  await reloaded.evaluate(() => window.tidemark?.start({ batch: 100, everyMs: 5 }))
  await expect.poll(() => durable.get(source) ?? 0).toBeGreaterThan(after.applied + 2_000)
  await reloaded.evaluate(() => window.tidemark?.stop())
  const offlineDurable = durable.get(source) ?? 0
  await reloaded.reload()
  await reloaded.waitForFunction(() => window.tidemark !== undefined)
  const final = await snapshot(reloaded)
  console.log(
    `wal offline reload: pages=1 toggles=1 (offline) acknowledged=${acknowledged} recovered=${after.applied} re-sent as duplicates=${again?.duplicates} ` +
      `ingested offline to ${offlineDurable}, after a second offline reload applied=${final.applied}`,
  )
  expect(final).toMatchObject({ source, online: false, controlled: true })
  expect(final.applied).toBeGreaterThanOrEqual(offlineDurable)
})

test.describe('crashes and tab ownership (no service worker)', () => {
  // A service worker that shares the crashed renderer would stall the browser's network emulation.
  test.use({ serviceWorkers: 'block' })

  test('a tab whose renderer crashes mid-stream comes back with every durable event', async ({ context, page }) => {
    const durable = await listenForDurable(context)
    const { source } = await openTab(page, '/?shell=0&checkpointEvery=5000')
    await page.evaluate(() => window.tidemark?.start({ batch: 250, everyMs: 0 }))
    await expect.poll(() => durable.get(source) ?? 0, { timeout: 30_000 }).toBeGreaterThan(10_000)
    await crash(page)
    const acknowledged = durable.get(source) ?? 0
    const { page: restored, source: reopened, report } = await restoreTab(context, source, '/?shell=0')
    expect(reopened).toBe(source)
    expect(report?.corrupt).toEqual([])
    const after = await snapshot(restored)
    console.log(`wal renderer crash: pages=1 acknowledged=${acknowledged} recovered=${after.applied} (${after.applied - acknowledged} committed but not yet reported)`)
    expect(after.applied).toBeGreaterThanOrEqual(acknowledged)
    expect(await restored.evaluate((to) => window.tidemark?.reingest(1, to), acknowledged)).toEqual({ accepted: 0, duplicates: acknowledged })
  })

  test('two tabs claim different sources and neither touches the other’s log', async ({ context }) => {
    const durable = await listenForDurable(context)
    const a = await context.newPage()
    const b = await context.newPage()
    const tabA = await openTab(a, '/?shell=0')
    const tabB = await openTab(b, '/?shell=0')
    expect(tabA.source).not.toBe(tabB.source)
    // A duplicated tab inherits B's sessionStorage, finds B's source held and takes another.
    const { page: duplicate, source: sourceC } = await restoreTab(context, tabB.source, '/?shell=0')
    expect(sourceC).not.toBe(tabB.source)
    await duplicate.close()

    // A writes until it crashes, at a pace that keeps re-sending all it acknowledged (below) quick; B stops on its own after 30,000 readings.
    await a.evaluate(() => window.tidemark?.start({ batch: 50, everyMs: 10 }))
    await b.evaluate(() => window.tidemark?.start({ batch: 50, everyMs: 10, upTo: 30_000 }))
    await expect.poll(() => Math.min(durable.get(tabA.source) ?? 0, durable.get(tabB.source) ?? 0), { timeout: 30_000 }).toBeGreaterThan(5_000)
    await crash(a)
    await b.evaluate(() => window.tidemark?.stop())
    const ackA = durable.get(tabA.source) ?? 0
    const ackB = durable.get(tabB.source) ?? 0

    const { page: restoredA } = await restoreTab(context, tabA.source, '/?shell=0')
    await b.reload()
    await b.waitForFunction(() => window.tidemark !== undefined)
    for (const [page, source, acknowledged] of [
      [restoredA, tabA.source, ackA],
      [b, tabB.source, ackB],
    ] as const) {
      const after = await snapshot(page)
      console.log(`wal two tabs: ${source} acknowledged=${acknowledged} recovered=${after.applied} sources in its engine=${after.sources}`)
      expect(after.source).toBe(source)
      expect(after.sources).toBe(1)
      expect(after.applied).toBeGreaterThanOrEqual(acknowledged)
      expect(await page.evaluate(() => window.tidemark?.report?.corrupt)).toEqual([])
      expect(await page.evaluate((to) => window.tidemark?.reingest(1, to), acknowledged)).toEqual({ accepted: 0, duplicates: acknowledged })
    }
    expect(await b.evaluate(() => indexedDB.databases().then((dbs) => dbs.map((db) => db.name).sort()))).toEqual(
      [`tidemark-${tabA.source}`, `tidemark-${tabB.source}`, `tidemark-${sourceC}`].sort(),
    )
  })

  test('a tab whose source lock is taken stops writing at once', async ({ context, page }) => {
    const { source } = await openTab(page, '/?shell=0')
    await page.evaluate(() => window.tidemark?.start({ batch: 50, everyMs: 2 }))
    await expect.poll(async () => (await snapshot(page)).durableSeq).toBeGreaterThan(500)
    const thief = await context.newPage()
    // Any same-origin document shares the lock manager; this one runs no app of its own.
    await thief.goto('/sw.js')
    await thief.evaluate(
      (name) =>
        new Promise<void>((resolve) => {
          void navigator.locks.request(`tidemark:source:${name}`, { steal: true }, () => {
            resolve()
            return new Promise(() => {})
          })
        }),
      source,
    )
    await expect.poll(async () => (await snapshot(page)).errors.length).toBeGreaterThan(0)
    expect((await snapshot(page)).errors[0]).toMatch(/no longer holds its source claim/)
    // The page keeps trying; not one more record reaches its log.
    const stored = await storedRecords(thief, source)
    const errorsThen = (await snapshot(page)).errors.length
    await expect.poll(async () => (await snapshot(page)).errors.length).toBeGreaterThan(errorsThen + 20)
    console.log(`wal stolen lock: log records when the lock was taken=${stored}, refused writes since=${(await snapshot(page)).errors.length}`)
    expect(await storedRecords(thief, source)).toBe(stored)
  })
})

/** Log records in the source's database, read through a connection of its own. */
function storedRecords(page: Page, source: string): Promise<number> {
  return page.evaluate(
    (name) =>
      new Promise<number>((resolve, reject) => {
        const request = indexedDB.open(`tidemark-${name}`)
        request.onerror = () => reject(request.error)
        request.onsuccess = () => {
          const db = request.result
          const count = db.transaction('wal').objectStore('wal').count()
          count.onsuccess = () => {
            db.close()
            resolve(count.result)
          }
          count.onerror = () => reject(count.error)
        }
      }),
    source,
  )
}
