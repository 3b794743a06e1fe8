/**
 * What the relay refuses, seen from the pages: a device page with no token, with a token signed
 * with another secret, with an expired token (refused when it opens its room); a dashboard that
 * writes into a device's room (read-only); a device that writes another device's source into
 * its own log, or its own source into another device's log. Each page shows the relay's reason
 * in its sync status; the devices allowed to write go on and every dashboard converges on their
 * readings alone: no dashboard ever shows anything refused.
 */
import { expect, type Page, test } from '@playwright/test'
import {
  groundTruth,
  openStormPage,
  type StormPage,
  snapshotOf,
  startIngest,
  statusChangesOf,
  stopIngest,
  stormCommand,
  stormPageUrl,
  stormSeed,
  waitForConvergence,
} from '@tidemark/storm'
import { FORGED_KEY } from '../pages/hostilePeer.ts'
import { killRelays, type RelayProcess, relayDataDir, startRelayProcess } from '../support/relayProcess.ts'
import { dashboardToken, deviceToken, signedToken, stormSource } from '../support/relayTokens.ts'
import { STORM_PATH, truth } from '../support/stormChecks.ts'

test.describe.configure({ timeout: 120_000 })
test.use({ trace: 'off' })

let relay: RelayProcess
test.beforeEach(async () => {
  relay = await startRelayProcess({ dataDir: relayDataDir() })
})
test.afterEach(async () => {
  await relay.stop()
  await killRelays()
})

/** The reasons the page reported, and what it shows as refused. */
async function refusalsOf(page: Page): Promise<{ readonly reported: string[]; readonly shown: string }> {
  return { reported: (await stormCommand(page, 'refusals')) as string[], shown: (await page.locator('#refusals').textContent()) ?? '' }
}

test('refused tokens and forbidden writes: each page shows the relay’s reason, and no dashboard ever shows refused data', async ({ browser, baseURL }) => {
  const seed = stormSeed()
  const room = `auth-${seed}`
  const contexts: Awaited<ReturnType<typeof browser.newContext>>[] = []
  const open = async (role: 'device' | 'dashboard', pageSeed: number, params: Record<string, string>): Promise<StormPage> => {
    const context = await browser.newContext()
    contexts.push(context)
    return openStormPage(context, stormPageUrl(`${baseURL}${STORM_PATH}`, { role, server: relay.url, room, seed: pageSeed }, params))
  }
  const device = async (k: number, token: (source: string) => Promise<string | null>): Promise<StormPage> => {
    const source = stormSource(seed + k)
    const value = await token(source)
    return open('device', seed + k, value === null ? { source } : { source, token: value })
  }
  const claims = (source: string) => ({ sub: source, role: 'device', rooms: [`${room}/${source}`], replicas: [source], sources: [source] })
  try {
    const writer = await device(0, (source) => deviceToken(relay, room, source))
    const forger = await device(1, (source) => deviceToken(relay, room, source))
    const board = await open('dashboard', seed + 100, { token: await dashboardToken(relay, room) })
    const hostileBoard = await open('dashboard', seed + 101, { token: await dashboardToken(relay, room) })
    const noToken = await device(2, async () => null)
    const badSignature = await device(3, (source) => signedToken(claims(source), { secret: 'not the relay secret, but 32+ bytes long' }))
    const expired = await device(4, (source) => signedToken(claims(source), { expiresAt: Math.floor(Date.now() / 1000) - 60 }))
    const devices = [writer, forger, noToken, badSignature, expired]
    for (const d of devices) await startIngest(d.page, { batch: 20, everyMs: 100 })

    // Refused when they open their rooms.
    for (const [page, reason] of [
      [noToken, 'tidemark:no-token'],
      [badSignature, 'tidemark:bad-signature'],
      [expired, 'tidemark:token-expired'],
    ] as const) {
      await expect.poll(async () => (await snapshotOf(page.page)).refusal, { timeout: 20_000 }).toBe(reason)
    }
    // A dashboard writing into the writer's room; the forger writing the writer's source, then into the writer's log.
    await expect.poll(async () => (await snapshotOf(board.page)).counted, { timeout: 20_000 }).toBeGreaterThan(0)
    await stormCommand(hostileBoard.page, 'writeAsDashboard', `${room}/${writer.source}`)
    await expect.poll(async () => (await refusalsOf(hostileBoard.page)).reported, { timeout: 20_000 }).toEqual(['tidemark:refused read-only'])
    await stormCommand(forger.page, 'writeForeignSource', writer.source)
    await expect.poll(async () => (await refusalsOf(forger.page)).reported.length, { timeout: 20_000 }).toBe(1)
    // Started over with a new doc, it is in sync again before the next attempt.
    await expect.poll(async () => (await snapshotOf(forger.page)).refusal, { timeout: 20_000 }).toBeNull()
    await stormCommand(forger.page, 'writeForeignLog', writer.source)
    await expect.poll(async () => (await refusalsOf(forger.page)).reported.length, { timeout: 20_000 }).toBe(2)

    for (const d of devices) await stopIngest(d.page)
    const stopped = await Promise.all([writer, forger].map((d) => snapshotOf(d.page)))
    const expected = groundTruth(
      truth,
      stopped.map((s) => ({ source: s.source, seed: s.seed, produced: s.produced, lateIds: s.lateIds, firstBatchEnd: 20 })),
    )
    // Every page that syncs but the forger, whose own engine merged what it wrote into its own doc.
    const pages = [writer, board, hostileBoard].map((p) => p.page)
    // The devices each hold their own readings only: the dashboards are the pages that must show both.
    const { converged, snapshots } = await waitForConvergence([board.page, hostileBoard.page], 30_000, (s) => s[0]?.digest === expected.digest)
    const refused = await Promise.all([noToken, badSignature, expired, hostileBoard, forger, writer, board].map(async (p) => ({ source: p.source, ...(await refusalsOf(p.page)), status: (await statusChangesOf(p.page)).map((c) => c.status) })))
    const keys = await Promise.all(pages.map(async (page) => (await stormCommand(page, 'keysSeen')) as string[]))
    console.log(
      `auth: seed=${seed} ${refused.map((r) => `${r.source}: [${r.reported.join(', ')}]`).join('; ')}; ` +
        `dashboards counted ${snapshots.map((s) => s.counted).join(', ')} of ${expected.counted} (writer ${stopped[0]?.produced}, forger ${stopped[1]?.produced}); keys seen ${JSON.stringify(keys)}`,
    )
    expect(converged).toBe(true)
    const [noTokenSeen, badSignatureSeen, expiredSeen, hostileSeen, forgerSeen, writerSeen, boardSeen] = refused
    expect(noTokenSeen?.reported).toEqual(['tidemark:no-token'])
    expect(badSignatureSeen?.reported).toEqual(['tidemark:bad-signature'])
    expect(expiredSeen?.reported).toEqual(['tidemark:token-expired'])
    expect(hostileSeen?.reported).toEqual(['tidemark:refused read-only'])
    expect(forgerSeen?.reported).toEqual([`tidemark:refused foreign-source ${writer.source}`, `tidemark:refused foreign-replica ${writer.source}`])
    expect(writerSeen?.reported).toEqual([])
    expect(boardSeen?.reported).toEqual([])
    // Each reason is on the page and in its sync status changes.
    for (const seen of [noTokenSeen, badSignatureSeen, expiredSeen, hostileSeen, forgerSeen]) {
      for (const reason of seen?.reported ?? []) {
        expect(seen?.shown).toContain(reason)
        expect(seen?.status).toContain(`refused: ${reason}`)
      }
    }
    // The pages refused at authentication stay refused and offline.
    for (const page of [noToken, badSignature, expired]) expect(await snapshotOf(page.page)).toMatchObject({ syncState: 'offline' })
    // Nothing forged was ever shown by the dashboards (the hostile one included) or the device it was forged for.
    for (const seen of keys) expect(seen).not.toContain(FORGED_KEY)
    expect(keys[0]).toEqual(['k0', 'k1', 'k2', 'k3'])
    for (const s of snapshots) expect(s.errors).toEqual([])
  } finally {
    for (const context of contexts) await context.close()
  }
})
