/**
 * Without SharedWorker (deleted by an init script, as in browsers that lack it) the engine is
 * hosted by a leader tab's dedicated worker, elected with Web Locks, and the other tabs reach it
 * over a BroadcastChannel. When the leader tab closes mid-stream, another tab takes over: the
 * batches in flight are sent again to the new host, and the ground truth holds exactly.
 */
import { type BrowserContext, expect, type Page, test } from '@playwright/test'
import { collect, connected, type Device, expectGroundTruth, info, produce, StormLedger, stop, type WorkerTab } from './workerDriver.ts'
import { durableGrowth } from './workerWaits.ts'

test.use({ trace: 'off' })

const NO_SHARED_WORKER = 'delete globalThis.SharedWorker'
/** Readings (20 a batch) each device has durable before the leader closes, and durable past those after it closed. */
const DURABLE_BEFORE = 200
const DURABLE_THROUGH = 400

async function openTab(context: BrowserContext, baseURL: string, label: string): Promise<{ page: Page; tab: WorkerTab }> {
  const page = await context.newPage()
  page.on('pageerror', (error) => console.log(`[${label}] page error: ${error.message}`))
  await page.goto(`${baseURL}/worker.html`)
  await page.waitForFunction(() => window.workerPage !== undefined || window.workerPageError !== undefined)
  expect(await page.evaluate(() => window.workerPageError)).toBeUndefined()
  return { page, tab: { label, evaluate: (expression) => page.evaluate(expression) } }
}

test('without SharedWorker a leader tab hosts the engine; it closes mid-stream and another tab takes over, losing and doubling nothing', async ({ browser, baseURL }) => {
  const context = await browser.newContext()
  await context.addInitScript(NO_SHARED_WORKER)
  try {
    const a = await openTab(context, baseURL as string, 'A')
    const b = await openTab(context, baseURL as string, 'B')
    const c = await openTab(context, baseURL as string, 'C')
    const before = await Promise.all([a, b, c].map((o) => info(o.tab)))
    expect(before.map((i) => i.sharedWorker)).toEqual([false, false, false])
    expect(before.map((i) => [i.connection.mode, i.connection.leader])).toEqual([
      ['leader', true],
      ['leader', false],
      ['leader', false],
    ])
    expect(new Set(before.map((i) => i.connection.instance)).size).toBe(1)

    const ledger = new StormLedger()
    const devices: Device[] = [
      { tab: b.tab, source: 'device-b', seed: 21 },
      { tab: c.tab, source: 'device-c', seed: 22 },
    ]
    for (const device of devices) await produce(device)
    // Mid-stream: every device has readings durable in the leader's host before it closes.
    const atClose = await durableGrowth(ledger, devices, new Map(), DURABLE_BEFORE, 'before the leader tab closes')
    const closedAt = Date.now()
    await a.page.close()
    // The followers keep producing through the takeover: readings well past those durable at the close become durable, through the new host.
    await durableGrowth(ledger, devices, atClose, DURABLE_THROUGH, 'through the takeover')
    const produced = new Map<string, number>()
    for (const device of devices) produced.set(device.source, await stop(device))
    await collect(ledger, [b.tab, c.tab])
    const after = await Promise.all([connected(b.tab), connected(c.tab)])
    expect(after.map((i) => i.connection.leader).sort()).toEqual([false, true])
    expect(after[0]?.connection.instance).toBe(after[1]?.connection.instance)
    expect(after[0]?.connection.instance).not.toBe(before[0]?.connection.instance)
    expect(after.map((i) => i.connection.epoch)).toEqual([2, 2])
    const welcomed = Math.min(...after.map((i) => i.hosts.at(-1)?.at ?? Number.NaN))
    const figures = await expectGroundTruth(ledger, devices, produced, [b.tab, c.tab])
    console.log(
      `worker-leader: leader tab closed mid-stream; new host welcomed the followers ${welcomed - closedAt} ms after the close ` +
        `(page-measured ${after.map((i) => i.connection.lastTakeoverMs).join('/')} ms); produced ${figures.produced}, ${figures.counted} counted, ${figures.lateLane} late lane`,
    )
  } finally {
    await context.close()
  }
})
