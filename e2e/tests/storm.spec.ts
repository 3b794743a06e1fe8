/**
 * Reconnect storms and crash recovery through a real Tidemark relay (`@tidemark/storm`): devices
 * in separate browser contexts ingest while their network drops and returns on a seeded random
 * schedule, each writing its own room with a device token; dashboards follow the relay's
 * directory read-only. Every page ends up with the window values the driver computes from the
 * readings the devices report they produced. `STORM_SECONDS` sets the main storm's length
 * (default 60), `STORM_SEED` replays a run. Relay restarts, scale-out and authorization have
 * their own specs (relay-*.spec.ts).
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
  type StormSnapshot,
  snapshotOf,
  startIngest,
  stopIngest,
  stormCommand,
  stormPageUrl,
  stormReady,
  stormSeed,
  type TruthFigures,
  transitionsOf,
  waitForConvergence,
} from '@tidemark/storm'
import { killRelays, type RelayProcess, relayDataDir, startRelayProcess } from '../support/relayProcess.ts'
import { dashboardToken, deviceToken, stormSource } from '../support/relayTokens.ts'
import { checkStorm, STORM_PATH, stormParams, truth } from '../support/stormChecks.ts'

const STORM_SECONDS = Number(process.env.STORM_SECONDS ?? 60)
test.describe.configure({ timeout: STORM_SECONDS * 1_000 + 180_000 })
// Traces of eight pages for a minute are large and slow the pages down.
test.use({ trace: 'off' })

let relay: RelayProcess
test.beforeEach(async () => {
  relay = await startRelayProcess({ dataDir: relayDataDir() })
})
test.afterEach(async () => {
  await relay.stop()
  await killRelays()
})

test('storm: 6 devices toggling offline at random, 2 dashboards, all converge on the ground truth', async ({ browser, baseURL }) => {
  const seed = stormSeed()
  console.log(`storm: seed=${seed} STORM_SECONDS=${STORM_SECONDS}`)
  const result = await runStorm({ browser, baseURL: baseURL as string, path: STORM_PATH, server: relay.url, params: stormParams(() => relay), truth, seconds: STORM_SECONDS, seed })
  try {
    checkStorm(result)
  } finally {
    await result.close()
  }
})

test('hostile devices: the relay refuses their writes with a reason the page reports; they start over with a new doc and everyone converges', async ({ browser, baseURL }) => {
  const seed = stormSeed()
  console.log(`hostile: seed=${seed}`)
  let producedAtAttack: number[] = []
  let refusals: string[][] = []
  const result = await runStorm({
    browser,
    baseURL: baseURL as string,
    path: STORM_PATH,
    server: relay.url,
    params: stormParams(() => relay),
    truth,
    devices: 3,
    dashboards: 2,
    seconds: 8,
    seed,
    toggle: [200, 800],
    during: async (storm) => {
      await storm.sleep(2_000)
      const [first, second] = storm.devices as [StormPage, StormPage]
      // A fake replica with malformed entries in its log; misshapen entries in its own log.
      await stormCommand(first.page, 'writeMalformed', 20)
      await stormCommand(second.page, 'writeMalformedOwn', 20)
      producedAtAttack = await Promise.all(storm.devices.map(async (d) => (await snapshotOf(d.page)).produced))
      // Each hears its refusal once it is online (the write waits in its doc until then).
      for (const device of [first, second]) {
        await expect.poll(async () => ((await stormCommand(device.page, 'refusals')) as string[]).length, { timeout: 20_000 }).toBeGreaterThan(0)
      }
      refusals = await Promise.all([...storm.devices, ...storm.dashboards].map(async (p) => (await stormCommand(p.page, 'refusals')) as string[]))
    },
  })
  try {
    checkStorm(result)
    const devices = result.snapshots.filter((s) => s.role === 'device')
    console.log(
      `hostile: refusals per page [${refusals.map((r) => r.join(' | ') || '-').join('; ')}]; invalid_remote_cell per page [${result.snapshots.map((s) => s.invalidRemote).join(', ')}]; ` +
        `readings after the attack per device [${devices.map((d, k) => d.produced - (producedAtAttack[k] ?? 0)).join(', ')}]`,
    )
    const [first, second] = devices as [StormSnapshot, StormSnapshot]
    expect(refusals[0]).toEqual([`tidemark:refused foreign-meta hostile-${first.source}`])
    expect(refusals[1]).toHaveLength(1)
    expect(refusals[1]?.[0]).toMatch(/^tidemark:refused malformed-entry /)
    expect(refusals.slice(2)).toEqual([[], [], []])
    // Nothing malformed reached anyone: only the hostile pages' own bindings judged (and refused) what they wrote into their own docs.
    expect(result.snapshots.map((page) => page.invalidRemote)).toEqual([20, 20, 0, 0, 0])
    expect(second.source).not.toBe(first.source)
    // The others kept serving, and the hostile ones too once on a new doc: every device went on ingesting after the attack, and those readings are in the truth every page shows.
    for (const [k, d] of devices.entries()) expect(d.produced).toBeGreaterThan(producedAtAttack[k] ?? Number.POSITIVE_INFINITY)
  } finally {
    await result.close()
  }
})

/** The truth of one device's readings `1..produced`, with its late lane. */
function deviceTruth(device: StormSnapshot, produced = device.produced, firstBatchEnd = 50): TruthFigures {
  return groundTruth(truth, [{ source: device.source, seed: device.seed, produced, lateIds: device.lateIds, firstBatchEnd }])
}

/** Opens a device page as a browser restoring its session would: a new tab of the same URL (which names its source). */
async function restoreDevice(context: BrowserContext, source: string, url: string): Promise<Page> {
  const page = await context.newPage()
  page.on('pageerror', (error) => console.error(`storm page error: ${error.message}`))
  await page.goto(url)
  expect(await stormReady(page)).toBe(source)
  return page
}

/** The storm page's URL for one device (source `stormSource(seed)`) or dashboard of `room`, with its relay token. */
async function pageUrl(baseURL: string, role: 'device' | 'dashboard', room: string, seed: number, extra = ''): Promise<string> {
  const source = stormSource(seed)
  const params = role === 'device' ? { source, token: await deviceToken(relay, room, source) } : { token: await dashboardToken(relay, room) }
  return stormPageUrl(`${baseURL}${STORM_PATH}${extra}`, { role, server: relay.url, room, seed }, params)
}

/**
 * A device page that can reopen offline and a dashboard, each in its own browser context, both
 * reporting to one ledger; both contexts are closed after `run`, whatever it throws.
 */
async function withDeviceAndBoard(
  browser: Browser,
  url: (role: 'device' | 'dashboard', extra?: string) => Promise<string>,
  run: (setup: { ledger: StormLedger; deviceContext: BrowserContext; device: StormPage; board: StormPage }) => Promise<void>,
): Promise<void> {
  const ledger = new StormLedger()
  const deviceContext = await browser.newContext()
  const boardContext = await browser.newContext()
  try {
    await ledger.listen(deviceContext)
    await ledger.listen(boardContext)
    const device = await openStormPage(deviceContext, await url('device', '?shell=1'))
    // Once the service worker controls the page, a reload caches every file of the page for the offline reopen.
    await device.page.reload()
    await stormReady(device.page)
    const board = await openStormPage(boardContext, await url('dashboard'))
    await run({ ledger, deviceContext, device, board })
  } finally {
    await deviceContext.close()
    await boardContext.close()
  }
}

test('crash: a device closed mid-ingest reopens offline with every durable event, then reconnects and converges', async ({ browser, baseURL }) => {
  const seed = stormSeed()
  const url = (role: 'device' | 'dashboard', extra = ''): Promise<string> => pageUrl(baseURL as string, role, `crash-${seed}`, seed, extra)
  await withDeviceAndBoard(browser, url, async ({ ledger, deviceContext, device, board }) => {
    const source = device.source
    await startIngest(device.page, { batch: 50, everyMs: 0 })
    await expect.poll(() => ledger.durable(source), { timeout: 30_000 }).toBeGreaterThan(5_000)
    await device.page.close({ runBeforeUnload: false })
    const acknowledged = ledger.durable(source)

    await deviceContext.setOffline(true)
    const reopened = await restoreDevice(deviceContext, source, await url('device', '?shell=1'))
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
  const url = (role: 'device' | 'dashboard', extra = ''): Promise<string> => pageUrl(baseURL as string, role, `reload-${seed}`, seed, extra)
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
