/**
 * One engine per origin in a SharedWorker (`@tidemark/worker`): three tabs hold one engine
 * instance, one log writer and one WebSocket to the relay; what they produce is counted
 * exactly once; and a reload of every tab mid-stream loses nothing that was durable.
 */
import { type BrowserContext, expect, type Page, test } from '@playwright/test'
import { startSyncProxy, type SyncProxy } from '@tidemark/storm'
import { WORKER_ENGINE_NAME, WORKER_REPLICA, WORKER_ROOM } from '../pages/workerConfig.ts'
import { killRelays, type RelayProcess, relayDataDir, startRelayProcess } from '../support/relayProcess.ts'
import { devToken } from '../support/relayTokens.ts'
import { collect, connected, type Device, expectGroundTruth, info, produce, snapshot, StormLedger, stop, type WorkerTab } from './workerDriver.ts'
import { durableGrowth } from './workerWaits.ts'

test.use({ trace: 'off' })

/** Readings (20 a batch) each device makes durable before it stops, and before the reload mid-stream. */
const DURABLE_PRODUCED = 400
const DURABLE_BEFORE_RELOAD = 200

let relay: RelayProcess | undefined
let proxy: SyncProxy | undefined
test.beforeEach(async () => {
  relay = await startRelayProcess({ dataDir: relayDataDir() })
  proxy = await startSyncProxy(relay.port)
})
test.afterEach(async () => {
  await proxy?.close()
  await relay?.stop()
  await killRelays()
})

function tabOf(page: Page, label: string): WorkerTab {
  return { label, evaluate: (expression) => page.evaluate(expression) }
}

async function openTab(context: BrowserContext, url: string, label: string): Promise<{ page: Page; tab: WorkerTab }> {
  const page = await context.newPage()
  page.on('pageerror', (error) => console.log(`[${label}] page error: ${error.message}`))
  await page.goto(url)
  await page.waitForFunction(() => window.workerPage !== undefined || window.workerPageError !== undefined)
  expect(await page.evaluate(() => window.workerPageError)).toBeUndefined()
  return { page, tab: tabOf(page, label) }
}

test('three tabs share one engine, one log writer and one socket; a reload of every tab loses nothing durable', async ({ browser, baseURL }) => {
  const context = await browser.newContext()
  try {
    // The host writes the three tabs' sources under one replica: its token says so.
    const token = await devToken(relay as RelayProcess, { role: 'device', room: WORKER_ROOM, replica: WORKER_REPLICA, source: ['device-a', 'device-b', 'device-c'] })
    const url = `${baseURL}/worker.html?relay=${encodeURIComponent((proxy as SyncProxy).url)}&token=${encodeURIComponent(token)}`
    const opened = [await openTab(context, url, 'A'), await openTab(context, url, 'B'), await openTab(context, url, 'C')]
    const tabs = opened.map((o) => o.tab)
    const infos = await Promise.all(tabs.map(info))
    expect(infos.map((i) => i.connection.mode)).toEqual(['shared', 'shared', 'shared'])
    expect(new Set(infos.map((i) => i.connection.instance)).size).toBe(1)
    expect(infos.map((i) => i.connection.epoch)).toEqual([1, 1, 1])
    // Under the page's strict policy (script-src 'self'; worker-src 'self'), which refuses a blob: worker, the host's was not refused.
    expect(await tabs[0]?.evaluate('window.workerPage.blobWorkerRefused()')).toBe(true)
    expect(infos.flatMap((i) => i.violations)).toEqual([])

    // One writer of the log, one host: the origin's held Web Locks say so.
    const locks = await tabs[0]?.evaluate<string[]>('window.workerPage.locks()')
    expect(locks?.filter((name) => name === `tidemark:log:${WORKER_ENGINE_NAME}`)).toHaveLength(1)
    expect(locks?.filter((name) => name.startsWith(`tidemark-worker:${WORKER_ENGINE_NAME}:host:`))).toHaveLength(1)
    // One socket: the proxy in front of the relay accepted one connection for three tabs.
    await expect.poll(async () => (await tabs[2]?.evaluate<{ state: string }>('window.workerPage.sync()'))?.state, { timeout: 20_000 }).toBe('connected')
    expect((proxy as SyncProxy).counts.accepted).toBe(1)

    const ledger = new StormLedger()
    const devices: Device[] = tabs.map((tab, i) => ({ tab, source: `device-${tab.label.toLowerCase()}`, seed: 11 + i }))
    for (const device of devices) await produce(device)
    await durableGrowth(ledger, devices, new Map(), DURABLE_PRODUCED, 'three tabs producing')
    const produced = new Map<string, number>()
    for (const device of devices) produced.set(device.source, await stop(device))
    await collect(ledger, tabs)
    const figures = await expectGroundTruth(ledger, devices, produced, tabs)
    console.log(`worker-shared: 3 tabs, one instance, produced ${figures.produced} (${figures.counted} counted, ${figures.lateLane} late lane), sockets ${(proxy as SyncProxy).counts.accepted}`)
    expect((proxy as SyncProxy).counts.accepted).toBe(1)

    // A reload of every tab mid-stream: what was durable is there after it, and nothing more than each tab produced.
    for (const device of devices) await device.tab.evaluate(`window.workerPage.produce(${JSON.stringify({ source: device.source, seed: device.seed, batch: 20, everyMs: 50, from: (produced.get(device.source) ?? 0) + 1 })})`)
    // Mid-stream: every device has readings durable past where it stopped before the tabs reload.
    await durableGrowth(ledger, devices, produced, DURABLE_BEFORE_RELOAD, 'producing again before the reload')
    await collect(ledger, tabs)
    const durableBefore = new Map(devices.map((d) => [d.source, ledger.durable(d.source)]))
    await Promise.all(opened.map((o) => o.page.reload()))
    for (const o of opened) await o.page.waitForFunction(() => window.workerPage !== undefined || window.workerPageError !== undefined)
    for (const tab of tabs) await connected(tab)
    const after = new Map<string, number>()
    for (const device of devices) {
      const next = await device.tab.evaluate<number>(`window.workerPage.nextSeq(${JSON.stringify(device.source)})`)
      expect(next - 1, `${device.source} lost durable readings in the reload`).toBeGreaterThanOrEqual(durableBefore.get(device.source) ?? 0)
      after.set(device.source, next - 1)
    }
    // Seqs 1..nextSeq-1 of every source, each exactly once: nothing half-applied, nothing twice.
    const reloaded = await expectGroundTruth(null, devices, after, tabs).catch(async (error: unknown) => {
      console.log(`after reload: ${JSON.stringify(await snapshot(tabs[0] as WorkerTab)).slice(0, 300)}`)
      throw error
    })
    const reloadInfo = await Promise.all(tabs.map(info))
    console.log(
      `worker-shared reload: durable before ${[...durableBefore.values()].join('/')}, in the engine after ${[...after.values()].join('/')}; ${reloaded.counted} counted; host instance ${reloadInfo[0]?.connection.instance === infos[0]?.connection.instance ? 'kept' : 'new'}, epoch ${reloadInfo[0]?.connection.epoch}`,
    )
  } finally {
    await context.close()
  }
})

test('the host worker ends mid-stream: the tabs make the SharedWorker again and the new host serves them, losing and doubling nothing', async ({ browser, baseURL }) => {
  const context = await browser.newContext()
  try {
    const url = `${baseURL}/worker.html`
    const tabs = [(await openTab(context, url, 'A')).tab, (await openTab(context, url, 'B')).tab]
    const before = await Promise.all(tabs.map(info))
    expect(before.map((i) => i.connection.mode)).toEqual(['shared', 'shared'])
    const ledger = new StormLedger()
    const devices: Device[] = tabs.map((tab, i) => ({ tab, source: `device-${tab.label.toLowerCase()}`, seed: 21 + i }))
    for (const device of devices) await produce(device)
    await durableGrowth(ledger, devices, new Map(), DURABLE_BEFORE_RELOAD, 'two tabs producing')
    // The host worker closes itself while both tabs produce; its lock goes with it.
    const ended = Date.now()
    expect(await tabs[0]?.evaluate('window.workerPage.command("endHost")')).toBe('ending')
    await expect
      .poll(async () => (await Promise.all(tabs.map(info))).map((i) => i.connection.state === 'connected' && i.connection.instance !== before[0]?.connection.instance), {
        timeout: 20_000,
        message: 'both tabs served by a new host',
      })
      .toEqual([true, true])
    const back = Date.now() - ended
    const after = await Promise.all(tabs.map(info))
    expect(new Set(after.map((i) => i.connection.instance)).size).toBe(1)
    const produced = new Map<string, number>()
    for (const device of devices) produced.set(device.source, await stop(device))
    await collect(ledger, tabs)
    const figures = await expectGroundTruth(ledger, devices, produced, tabs)
    console.log(`worker-shared host end: both tabs on a new host ${back} ms after it ended (epoch ${after[0]?.connection.epoch}); produced ${figures.produced}, ${figures.counted} counted, ${figures.lateLane} late lane`)
  } finally {
    await context.close()
  }
})
