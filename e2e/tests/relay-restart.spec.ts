/**
 * The relay restarted in the middle of a storm, on the same data directory and port: stopped
 * with SIGTERM (it stores every room, then exits) and killed with SIGKILL (it loses what it
 * accepted in its last write window). Pages reconnect with jitter and converge on the ground
 * truth; after a SIGKILL the devices' documents (kept by their logs) send the relay what it
 * lost. And a device that stays offline across the restarts is still on a fresh dashboard with
 * everything it had uploaded: its room came back from the relay's store.
 */
import { expect, type Page, test } from '@playwright/test'
import {
  groundTruth,
  openStormPage,
  runStorm,
  type RunningStorm,
  type StormResult,
  snapshotOf,
  startIngest,
  statusChangesOf,
  stopIngest,
  stormPageUrl,
  stormSeed,
  waitForConvergence,
} from '@tidemark/storm'
import { killRelays, type RelayExit, type RelayProcess, relayDataDir, relayMetric, startRelayProcess } from '../support/relayProcess.ts'
import { dashboardToken, deviceToken, stormSource } from '../support/relayTokens.ts'
import { checkStorm, STORM_PATH, stormParams, truth } from '../support/stormChecks.ts'

const STORM_SECONDS = Number(process.env.STORM_SECONDS ?? 60)
/** Shorter than the main storm: the restart is what is tested. */
const SECONDS = Math.max(5, Math.min(STORM_SECONDS, 20))
test.describe.configure({ timeout: 180_000 })
test.use({ trace: 'off' })

let relay: RelayProcess
test.beforeEach(async () => {
  relay = await startRelayProcess({ dataDir: relayDataDir() })
})
test.afterEach(async () => {
  await relay.stop()
  await killRelays()
})

/**
 * Stops the relay with `signal` half way through the storm, waits (bounded) until no page's sync
 * connection is still `connected`, starts it again on its data directory and port.
 */
function restartHalfWay(
  signal: NodeJS.Signals,
  record: (stopped: RelayExit, downMs: number, restartedAt: number, pages: Page[]) => void,
): (storm: RunningStorm) => Promise<void> {
  return async (storm) => {
    const pages = [...storm.devices, ...storm.dashboards].map((p) => p.page)
    await storm.sleep((SECONDS * 1_000) / 2)
    const stopped = await relay.stop(signal)
    const stoppedAt = Date.now()
    // Down until every client noticed: each page's sync status left `connected` (it cannot connect again while the relay is down).
    await expect
      .poll(
        async () => {
          const states = await Promise.all(pages.map(async (page) => (await snapshotOf(page)).syncState))
          return states.flatMap((state, i) => (state === 'connected' ? [i] : []))
        },
        { timeout: 15_000, message: 'pages (by index) whose sync status is still connected with the relay stopped' },
      )
      .toEqual([])
    const downMs = Date.now() - stoppedAt
    relay = await startRelayProcess({ dataDir: relay.dataDir, port: relay.port })
    record(stopped, downMs, Date.now(), pages)
  }
}

/** When each page was connected again after the restart: spread by the jitter, not in lockstep. */
async function reconnects(pages: readonly Page[], restartedAt: number): Promise<number[]> {
  return Promise.all(pages.map(async (page) => (await statusChangesOf(page)).find((c) => c.status === 'connected' && c.at >= restartedAt)?.at ?? Number.NaN))
}

for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
  test(`relay ${signal} in the middle of a storm, started again on its data directory: clients reconnect with jitter and converge, nothing lost`, async ({ browser, baseURL }) => {
    const seed = stormSeed()
    console.log(`restart ${signal}: seed=${seed} seconds=${SECONDS}`)
    let stopped: RelayExit | undefined
    let downMs = 0
    let restartedAt = 0
    let pages: Page[] = []
    const result: StormResult = await runStorm({
      browser,
      baseURL: baseURL as string,
      path: STORM_PATH,
      server: relay.url,
      params: stormParams(() => relay),
      truth,
      seconds: SECONDS,
      seed,
      // Both ways of going offline are stormed across the suite: Playwright's own setOffline here for the SIGTERM storm.
      network: signal === 'SIGTERM' ? 'emulate' : 'partition',
      during: restartHalfWay(signal, (exit, down, at, open) => {
        stopped = exit
        downMs = down
        restartedAt = at
        pages = open
      }),
    })
    try {
      expect(stopped).toEqual(signal === 'SIGTERM' ? { code: 0, signal: null } : { code: null, signal: 'SIGKILL' })
      const back = (await reconnects(pages, restartedAt)).map((at) => at - restartedAt)
      const updatesIn = await relayMetric(relay, 'tidemark_relay_updates_in_total')
      const held = await relayMetric(relay, 'tidemark_relay_updates_held_total')
      console.log(
        `restart ${signal}: relay exit ${JSON.stringify(stopped)}; every page saw it down within ${downMs} ms; pages connected again ${back.join(', ')} ms after it was back; ` +
          `the restarted relay accepted ${updatesIn} updates (${held} held until what they depend on arrived)`,
      )
      // Every page connected again after the restart (NaN: one never did), each at its own jittered time.
      expect(pages.length).toBeGreaterThan(1)
      expect(back).toHaveLength(pages.length)
      for (const ms of back) expect(ms).toBeGreaterThanOrEqual(0)
      expect(new Set(back).size, `pages reconnected at ${back.join(', ')} ms: all at once, no jitter`).toBeGreaterThan(1)
      expect(updatesIn).toBeGreaterThan(0)
      checkStorm(result)
    } finally {
      await result.close()
    }
  })
}

test('a device that stays offline across relay restarts (SIGTERM, then SIGKILL) is still on a fresh dashboard with everything it uploaded', async ({ browser, baseURL }) => {
  const seed = stormSeed()
  const room = `offline-${seed}`
  const source = stormSource(seed)
  const url = async (role: 'device' | 'dashboard', pageSeed: number): Promise<string> => {
    const params = role === 'device' ? { source, token: await deviceToken(relay, room, source) } : { token: await dashboardToken(relay, room) }
    return stormPageUrl(`${baseURL}${STORM_PATH}`, { role, server: relay.url, room, seed: pageSeed }, params)
  }
  const deviceContext = await browser.newContext()
  const boards: Awaited<ReturnType<typeof browser.newContext>>[] = []
  /** A dashboard in a context of its own, opened now: all it can show comes from the relay. */
  const freshDashboard = async (k: number): Promise<Page> => {
    const context = await browser.newContext()
    boards.push(context)
    return (await openStormPage(context, await url('dashboard', seed + 100 + k))).page
  }
  try {
    const device = await openStormPage(deviceContext, await url('device', seed))
    await startIngest(device.page, { batch: 20, everyMs: 50 })
    await expect.poll(async () => (await snapshotOf(device.page)).durable, { timeout: 30_000 }).toBeGreaterThan(1_000)
    await stopIngest(device.page)
    // Everything it ingested is acknowledged by the relay, then it goes offline for the rest of the test.
    await expect.poll(async () => (await snapshotOf(device.page)).pendingLocalUpdates, { timeout: 15_000 }).toBe(0)
    const uploaded = await snapshotOf(device.page)
    await deviceContext.setOffline(true)
    const expected = groundTruth(truth, [{ source, seed, produced: uploaded.produced, lateIds: uploaded.lateIds, firstBatchEnd: 20 }])
    expect(uploaded.digest).toBe(expected.digest)

    const figures: string[] = []
    for (const [k, signal] of (['SIGTERM', 'SIGKILL'] as const).entries()) {
      // Nothing accepted is waiting for the store (a SIGKILL loses only that).
      await expect.poll(() => relayMetric(relay, 'tidemark_relay_store_pending_bytes'), { timeout: 15_000 }).toBe(0)
      const stopped = await relay.stop(signal)
      relay = await startRelayProcess({ dataDir: relay.dataDir, port: relay.port })
      const board = await freshDashboard(k)
      const { converged, convergedAt, snapshots } = await waitForConvergence([board], 30_000, (s) => s[0]?.digest === expected.digest)
      const startedAt = (await statusChangesOf(board))[0]?.at ?? Number.NaN
      figures.push(`${signal} (exit ${stopped.code ?? stopped.signal}): a fresh dashboard counted ${snapshots[0]?.counted} of ${expected.counted} within ${convergedAt - startedAt} ms`)
      expect(converged).toBe(true)
      expect(snapshots[0]?.refusal).toBeNull()
      expect((await snapshotOf(device.page)).online).toBe(false)
    }
    console.log(`offline across restarts: seed=${seed} device uploaded ${uploaded.produced} readings (counted ${expected.counted}, late lane ${expected.lateLane}) then stayed offline; ${figures.join('; ')}`)

    // Back online, it ingests more; every page converges on all of it.
    await deviceContext.setOffline(false)
    await startIngest(device.page, { batch: 20, everyMs: 50 })
    await expect.poll(async () => (await snapshotOf(device.page)).durable, { timeout: 30_000 }).toBeGreaterThan(uploaded.produced + 500)
    await stopIngest(device.page)
    const stopped = await snapshotOf(device.page)
    const all = groundTruth(truth, [{ source, seed, produced: stopped.produced, lateIds: stopped.lateIds, firstBatchEnd: 20 }])
    const board = await freshDashboard(2)
    const { converged, snapshots } = await waitForConvergence([device.page, board], 30_000, (s) => s[0]?.digest === all.digest)
    expect(converged).toBe(true)
    expect(snapshots.flatMap((s) => s.errors)).toEqual([])
  } finally {
    await deviceContext.close()
    for (const context of boards) await context.close()
  }
})
