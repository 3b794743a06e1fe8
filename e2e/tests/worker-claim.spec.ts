/**
 * A tab's source claim with an engine in a SharedWorker (`connectEngine({ claim })`), with the
 * real `claimSource` registry in `localStorage`: a finish committed in the host's log retires the
 * claim even when the tab that held the source was gone by then, so no later tab session keeps
 * being handed a source that refuses every reading.
 */
import { type BrowserContext, expect, type Page, test } from '@playwright/test'
import type { WorkerPageApi } from '../pages/workerPage.ts'

test.use({ trace: 'off' })

type Claimed = NonNullable<ReturnType<WorkerPageApi['claimed']>>
type Sources = Awaited<ReturnType<WorkerPageApi['sources']>>

async function openTab(context: BrowserContext, url: string, label: string): Promise<Page> {
  const page = await context.newPage()
  page.on('pageerror', (error) => console.log(`[${label}] page error: ${error.message}`))
  await page.goto(url)
  await page.waitForFunction(() => window.workerPage !== undefined || window.workerPageError !== undefined)
  expect(await page.evaluate(() => window.workerPageError)).toBeUndefined()
  return page
}

const claimed = (page: Page): Promise<Claimed> => page.evaluate(() => window.workerPage?.claimed() as Claimed)
const PREFIX = 'claimtab'
const sources = (page: Page): Promise<Sources> => page.evaluate((prefix) => window.workerPage?.sources(prefix) as Promise<Sources>, PREFIX)

test("a source whose finish the host's log holds is retired by the next tab handed it; then tabs get new sources", async ({ browser, baseURL }) => {
  const context = await browser.newContext()
  try {
    // A tab without a claim keeps the SharedWorker (the host) alive throughout.
    const keeper = await openTab(context, `${baseURL}/worker.html`, 'keeper')
    expect((await keeper.evaluate(() => window.workerPage?.info()))?.connection.mode).toBe('shared')
    const url = `${baseURL}/worker.html?claim=${PREFIX}`

    const first = await openTab(context, url, 'first')
    const a = await claimed(first)
    expect(a.reuse).toBe('new')
    const stopped = await first.evaluate(async (source) => {
      window.workerPage?.produce({ source, seed: 7, batch: 20, everyMs: 50 })
      return window.workerPage?.stop()
    }, a.source)
    expect(stopped).toMatchObject({ errors: [] })
    await first.close()

    // The finish commits in the host's log while no tab of the claim is there to retire it, as
    // when the finishing tab closes before the host's answer reaches it.
    await keeper.evaluate((source) => window.workerPage?.finish(source), a.source)
    // Not held: the browser lets go of a closed tab's Web Lock on its own schedule, after close() resolved.
    await expect.poll(() => sources(keeper)).toEqual([{ source: a.source, finished: false, held: false }])

    // The next tab session is handed the source; the host's welcome says it is finished, and the page retires it.
    const second = await openTab(context, url, 'second')
    expect(await claimed(second)).toEqual({ source: a.source, reuse: 'takeover' })
    await expect.poll(() => sources(keeper)).toEqual([{ source: a.source, finished: true, held: true }])
    await second.close()

    // From then on no tab is handed it; a tab that finishes its own source retires it before the finish resolves.
    const third = await openTab(context, url, 'third')
    const c = await claimed(third)
    expect(c.source).not.toBe(a.source)
    expect(c.reuse).toBe('new')
    const afterFinish = await third.evaluate(async ([source, prefix]) => {
      await window.workerPage?.finish(source)
      return window.workerPage?.sources(prefix)
    }, [c.source, PREFIX] as const)
    expect(new Map(afterFinish?.map((s) => [s.source, s.finished]))).toEqual(
      new Map([
        [a.source, true],
        [c.source, true],
      ]),
    )
  } finally {
    await context.close()
  }
})
