/**
 * Reconnect storms and crash recovery against a real sync server (`@tidemark/storm`): devices in
 * separate browser contexts ingest while their network drops and returns on a seeded random
 * schedule; every page ends up with the window values the driver computes from the readings
 * the devices report they produced. `STORM_SECONDS` sets the main storm's length (default
 * 60), `STORM_SEED` replays a run.
 */
import { type Browser, type BrowserContext, expect, type Page, test } from '@playwright/test'
import {
  closeStormApp,
  digestDiff,
  groundTruth,
  openStormPage,
  runStorm,
  StormLedger,
  type StormPage,
  type StormResult,
  type StormSnapshot,
  snapshotOf,
  startIngest,
  statusChangesOf,
  stopIngest,
  stormCommand,
  stormPageUrl,
  stormReady,
  stormSeed,
  type TruthFigures,
  transitionsOf,
  tumblingTruth,
  waitForConvergence,
} from '@tidemark/storm'
import { type SyncServer, startSyncServer } from '@tidemark/sync-server'
import { STORM_LATENESS_MS, STORM_WINDOW_MS } from '../pages/stormConfig.ts'

const STORM_SECONDS = Number(process.env.STORM_SECONDS ?? 60)
/** The restart storm and the hostile peer are shorter: the first storm is the long one. */
const SHORT_SECONDS = Math.max(5, Math.min(STORM_SECONDS, 20))
/** The storm page's readings (the default `stormReading`) and its window values. */
const truth = tumblingTruth({ windowMs: STORM_WINDOW_MS, allowedLateness: STORM_LATENESS_MS })
const STORM_PATH = '/storm.html'
test.describe.configure({ timeout: STORM_SECONDS * 1_000 + 180_000 })
// Traces of eight pages for a minute are large and slow the pages down.
test.use({ trace: 'off' })

let server: SyncServer | undefined
test.beforeEach(async () => {
  server = await startSyncServer()
})
test.afterEach(async () => {
  await server?.stop()
  server = undefined
})

function checkStorm(result: StormResult): void {
  console.log(result.summary())
  expect(result.gaps).toEqual([])
  expect(result.truth.problems).toEqual([])
  expect(result.snapshots.flatMap((s) => s.errors)).toEqual([])
  expect(result.converged).toBe(true)
  // Zero lost, zero counted twice: every page shows exactly the truth recomputed from the readings.
  for (const page of result.snapshots) expect(page.digest).toBe(result.truth.digest)
  for (const count of result.dashboardCounts) expect(count).toBe(result.truth.counted)
  // The late lanes account for every reading not counted, and the receipts agree.
  expect(result.truth.counted + result.truth.lateLane).toBe(result.truth.produced)
  expect(result.receipts).toEqual({ accepted: result.truth.counted, beyondLateness: result.truth.lateLane, duplicates: 0, rejected: 0 })
  expect(result.problems).toEqual([])
  // Every scheduled toggle reached the browser, and every device's page saw its network go and come back.
  expect(result.toggles.acknowledged).toBe(result.toggles.issued)
  for (const device of result.toggles.perDevice) expect(device.observed).toBeGreaterThanOrEqual(2)
  expect(result.truth.produced).toBeGreaterThan(0)
}

test('storm: 6 devices toggling offline at random, 2 dashboards, all converge on the ground truth', async ({ browser, baseURL }) => {
  const seed = stormSeed()
  console.log(`storm: seed=${seed} STORM_SECONDS=${STORM_SECONDS}`)
  const result = await runStorm({ browser, baseURL: baseURL as string, path: STORM_PATH, server: (server as SyncServer).url, truth, seconds: STORM_SECONDS, seed })
  try {
    checkStorm(result)
  } finally {
    await result.close()
  }
})

test('server restart in the middle of a storm: clients reconnect with jitter and converge, nothing lost', async ({ browser, baseURL }) => {
  const seed = stormSeed()
  console.log(`restart storm: seed=${seed} seconds=${SHORT_SECONDS}`)
  let restartedAt = 0
  let pages: Page[] = []
  const result = await runStorm({
    browser,
    baseURL: baseURL as string,
    path: STORM_PATH,
    server: (server as SyncServer).url,
    truth,
    seconds: SHORT_SECONDS,
    seed,
    // Playwright's own setOffline here (the other storms cut each device's sync path): both ways of going offline are stormed.
    network: 'emulate',
    during: async (storm) => {
      pages = [...storm.devices, ...storm.dashboards].map((p) => p.page)
      await storm.sleep((SHORT_SECONDS * 1_000) / 2)
      const port = (server as SyncServer).port
      await (server as SyncServer).stop()
      // Down long enough for every client to notice; the new server starts with an empty room.
      await storm.sleep(1_000)
      server = await startSyncServer({ port })
      restartedAt = Date.now()
    },
  })
  try {
    expect(restartedAt).toBeGreaterThan(0)
    // When each page's socket was connected again after the restart: spread by the jitter, not in lockstep.
    const reconnects = await Promise.all(
      pages.map(async (page) => (await statusChangesOf(page)).find((c) => c.status === 'connected' && c.at >= restartedAt)?.at ?? Number.NaN),
    )
    console.log(`restart storm: server down ~1 s; pages connected again ${reconnects.map((at) => at - restartedAt).join(', ')} ms after it was back`)
    for (const at of reconnects) expect(at).toBeGreaterThanOrEqual(restartedAt)
    checkStorm(result)
  } finally {
    await result.close()
  }
})

test('hostile peer: malformed entries are refused as invalid_remote_cell, the others keep serving and converge', async ({ browser, baseURL }) => {
  const seed = stormSeed()
  console.log(`hostile: seed=${seed}`)
  let producedAtAttack: number[] = []
  const result = await runStorm({
    browser,
    baseURL: baseURL as string,
    path: STORM_PATH,
    server: (server as SyncServer).url,
    truth,
    devices: 3,
    dashboards: 2,
    seconds: 8,
    seed,
    toggle: [200, 800],
    during: async (storm) => {
      await storm.sleep(2_000)
      await stormCommand((storm.devices[0] as StormPage).page, 'writeMalformed', 20)
      // Then, once the dashboards have judged those, bytes that are not even Yjs on the dashboards' tab channel
      // (every tab's provider gets them, the sender's too: its channel is another object).
      for (const board of storm.dashboards) await expect.poll(async () => (await snapshotOf(board.page)).invalidRemote).toBeGreaterThanOrEqual(20)
      await stormCommand((storm.dashboards[1] as StormPage).page, 'writeGarbageFrames', 10)
      producedAtAttack = await Promise.all(storm.devices.map(async (d) => (await snapshotOf(d.page)).produced))
    },
  })
  try {
    checkStorm(result)
    const invalid = result.snapshots.map((s) => s.invalidRemote)
    const devices = result.snapshots.filter((s) => s.role === 'device')
    console.log(
      `hostile: 20 malformed entries in the doc, 10 garbage tab frames; invalid_remote_cell per page [${invalid.join(', ')}]; readings after the attack per device ` +
        `[${devices.map((d, k) => d.produced - (producedAtAttack[k] ?? 0)).join(', ')}]; e.g. ${result.snapshots[1]?.remoteAnomalies[0] ?? 'none'}`,
    )
    for (const page of result.snapshots) {
      // 20 entries each; the dashboards also 10 frames, each reported as an update that could not be applied.
      expect(page.invalidRemote).toBe(page.role === 'dashboard' ? 30 : 20)
      if (page.role === 'dashboard') expect(page.remoteAnomalies.filter((a) => /could not be applied/.test(a)).length).toBe(10)
    }
    console.log(`hostile: a dashboard's last anomaly: ${result.snapshots.at(-1)?.remoteAnomalies.at(-1)}`)
    // The others kept serving: every device went on ingesting after the attack, and those readings are in the truth every page shows.
    for (const [k, d] of devices.entries()) expect(d.produced).toBeGreaterThan(producedAtAttack[k] ?? Number.POSITIVE_INFINITY)
  } finally {
    await result.close()
  }
})

/** The truth of one device's readings `1..produced`, with its late lane. */
function deviceTruth(device: StormSnapshot, produced = device.produced, firstBatchEnd = 50): TruthFigures {
  return groundTruth(truth, [{ source: device.source, seed: device.seed, produced, lateIds: device.lateIds, firstBatchEnd }])
}

/** Opens a device page as a browser restoring its session would: a new tab whose sessionStorage names the old source. */
async function restoreDevice(context: BrowserContext, source: string, url: string): Promise<Page> {
  const page = await context.newPage()
  await page.addInitScript((name) => sessionStorage.setItem('tidemark:source:storm-device', name), source)
  page.on('pageerror', (error) => console.error(`storm page error: ${error.message}`))
  await page.goto(url)
  expect(await stormReady(page)).toBe(source)
  return page
}

function pageUrl(baseURL: string, role: 'device' | 'dashboard', room: string, seed: number, extra = ''): string {
  return stormPageUrl(`${baseURL}${STORM_PATH}${extra}`, { role, server: (server as SyncServer).url, room, seed })
}

/**
 * A device page that can reopen offline and a dashboard, each in its own browser context, both
 * reporting to one ledger; both contexts are closed after `run`, whatever it throws.
 */
async function withDeviceAndBoard(
  browser: Browser,
  url: (role: 'device' | 'dashboard', extra?: string) => string,
  run: (setup: { ledger: StormLedger; deviceContext: BrowserContext; device: StormPage; board: StormPage }) => Promise<void>,
): Promise<void> {
  const ledger = new StormLedger()
  const deviceContext = await browser.newContext()
  const boardContext = await browser.newContext()
  try {
    await ledger.listen(deviceContext)
    await ledger.listen(boardContext)
    const device = await openStormPage(deviceContext, url('device', '?shell=1'))
    // Once the service worker controls the page, a reload caches every file of the page for the offline reopen.
    await device.page.reload()
    await stormReady(device.page)
    const board = await openStormPage(boardContext, url('dashboard'))
    await run({ ledger, deviceContext, device, board })
  } finally {
    await deviceContext.close()
    await boardContext.close()
  }
}

test('crash: a device closed mid-ingest reopens offline with every durable event, then reconnects and converges', async ({ browser, baseURL }) => {
  const seed = stormSeed()
  const url = (role: 'device' | 'dashboard', extra = ''): string => pageUrl(baseURL as string, role, `crash-${seed}`, seed, extra)
  await withDeviceAndBoard(browser, url, async ({ ledger, deviceContext, device, board }) => {
    const source = device.source
    await startIngest(device.page, { batch: 50, everyMs: 0 })
    await expect.poll(() => ledger.durable(source), { timeout: 30_000 }).toBeGreaterThan(5_000)
    await device.page.close({ runBeforeUnload: false })
    const acknowledged = ledger.durable(source)

    await deviceContext.setOffline(true)
    const reopened = await restoreDevice(deviceContext, source, url('device', '?shell=1'))
    const after = await snapshotOf(reopened)
    expect(after.online).toBe(false)
    expect(after.errors).toEqual([])
    // Every acknowledged reading is there, counted once: the device alone shows the truth of 1..recovered.
    expect(after.produced).toBeGreaterThanOrEqual(acknowledged)
    const recovered = deviceTruth(after)
    expect(recovered.problems).toEqual([])
    expect(after.digest).toBe(recovered.digest)

    await deviceContext.setOffline(false)
    const backAt = Date.now()
    // A device hands a batch to its document only once its log has committed it, so the dashboard
    // cannot hold anything the crash lost: after the reconnect both pages show exactly the
    // recovered truth, readings 1..recovered, each once.
    const { converged, convergedAt, snapshots } = await waitForConvergence([reopened, board.page], 30_000, (s) =>
      s.every((snapshot) => snapshot.digest === recovered.digest),
    )
    if (!converged) console.log(`crash: dashboard vs recovered truth: ${digestDiff(recovered.digest, snapshots[1]?.digest ?? '').join('; ')}`)
    console.log(
      `crash seed=${seed} pages=2 toggles=2 (offline for the reopen, online) closed mid-ingest: acknowledged=${acknowledged} ` +
        `recovered=${after.produced} (${after.produced - acknowledged} committed but not yet reported) counted=${recovered.counted} lateLane=${recovered.lateLane}; ` +
        `after reconnect dashboard counted=${snapshots[1]?.counted} converged=${converged} convergenceMs=${convergedAt - backAt}`,
    )
    expect(converged).toBe(true)
    expect(snapshots[0]?.digest).toBe(snapshots[1]?.digest)
    expect(snapshots.flatMap((s) => s.errors)).toEqual([])
    await closeStormApp(reopened)
  })
})

test('offline reload: a device goes offline, ingests, reloads offline, keeps ingesting, reconnects: nothing lost', async ({ browser, baseURL }) => {
  const seed = stormSeed()
  const url = (role: 'device' | 'dashboard', extra = ''): string => pageUrl(baseURL as string, role, `reload-${seed}`, seed, extra)
  await withDeviceAndBoard(browser, url, async ({ ledger, deviceContext, device, board }) => {
    const source = device.source
    const ingest = { batch: 20, everyMs: 20 }
    await startIngest(device.page, ingest)
    await expect.poll(() => ledger.durable(source), { timeout: 30_000 }).toBeGreaterThan(500)

    await deviceContext.setOffline(true)
    // The page has seen it (its socket may stay open until the close handshake gets through: Chromium holds it while offline).
    await expect.poll(async () => (await transitionsOf(device.page)).at(-1)?.online).toBe(false)
    const offlineFrom = ledger.durable(source)
    await expect.poll(() => ledger.durable(source), { timeout: 30_000 }).toBeGreaterThan(offlineFrom + 1_000)
    // Reload mid-ingest, still offline: the service worker serves the page, the log restores the readings.
    const acknowledged = ledger.durable(source)
    await device.page.reload()
    await stormReady(device.page)
    const reloaded = await snapshotOf(device.page)
    expect(reloaded.online).toBe(false)
    expect(reloaded.produced).toBeGreaterThanOrEqual(acknowledged)
    expect(reloaded.digest).toBe(deviceTruth(reloaded, reloaded.produced, ingest.batch).digest)

    await startIngest(device.page, ingest)
    await expect.poll(() => ledger.durable(source), { timeout: 30_000 }).toBeGreaterThan(reloaded.produced + 1_000)
    await stopIngest(device.page)
    const stopped = await snapshotOf(device.page)
    await deviceContext.setOffline(false)
    const backAt = Date.now()
    const truth = deviceTruth(stopped, stopped.produced, ingest.batch)
    const { converged, convergedAt, snapshots } = await waitForConvergence([device.page, board.page], 30_000, (s) => s[1]?.digest === truth.digest)
    const seen = await transitionsOf(device.page)
    // Durable reports: 1..acknowledged before the reload, then from what the reloaded page recovered to the end.
    const before = ledger.totals(new Map([[source, acknowledged]]))
    const afterReload = ledger.totals(new Map([[source, stopped.produced]]), new Map([[source, reloaded.produced + 1]]))
    console.log(
      `offline reload seed=${seed} pages=2 toggles=2 (seen by the reloaded page: ${seen.length}) produced=${truth.produced} counted=${truth.counted} lateLane=${truth.lateLane} ` +
        `(offline from seq ${offlineFrom}, reloaded at acknowledged=${acknowledged}, recovered=${reloaded.produced}) dashboard=${snapshots[1]?.counted} ` +
        `converged=${converged} convergenceMs=${convergedAt - backAt}`,
    )
    expect(before.gaps).toEqual([])
    expect(afterReload.gaps).toEqual([])
    expect(truth.problems).toEqual([])
    expect(converged).toBe(true)
    expect(snapshots.flatMap((s) => s.errors)).toEqual([])
    expect(stopped.lateLane).toBe(truth.lateLane)
    expect(snapshots[1]?.counted).toBe(truth.counted)
  })
})
