/**
 * What the storm specs share: the storm page, its ground truth, the page parameters that give
 * each page its identity and relay token, and the checks every storm must pass.
 */
import { expect } from '@playwright/test'
import { type StormOptions, type StormPageSlot, type StormResult, tumblingTruth } from '@tidemark/storm'
import { STORM_LATENESS_MS, STORM_WINDOW_MS } from '../pages/stormConfig.ts'
import { dashboardToken, deviceToken, stormSource } from './relayTokens.ts'

/** The storm page (pages/storm.html). */
export const STORM_PATH = '/storm.html'

/** The storm page's readings (the default `stormReading`) and its window values. */
export const truth = tumblingTruth({ windowMs: STORM_WINDOW_MS, allowedLateness: STORM_LATENESS_MS })

/**
 * Each storm page's own parameters: a device gets the source `stormSource(its seed)` and a
 * device token for the room `<room>/<source>` (its replica is its source); a dashboard gets a
 * dashboard token for every room under `<room>`. Tokens are minted through the development
 * endpoint of `tokens()` (a relay of the storm). `relays` (optional) gives the pages their relay
 * URLs instead of the storm's server.
 *
 * @example
 * await runStorm({ ...options, params: stormParams(() => relay) })
 */
export function stormParams(
  tokens: () => { readonly httpUrl: string },
  relays?: (page: StormPageSlot) => readonly string[] | undefined,
): NonNullable<StormOptions['params']> {
  return async (page) => {
    const urls = relays?.(page)
    const extra = urls === undefined ? {} : { relays: urls.join(',') }
    if (page.role === 'dashboard') return { token: await dashboardToken(tokens(), page.room), ...extra }
    const source = stormSource(page.seed)
    return { source, token: await deviceToken(tokens(), page.room, source), ...extra }
  }
}

/** Everything a storm must show: nothing lost, nothing counted twice, every page on the ground truth, no refusal left. */
export function checkStorm(result: StormResult): void {
  console.log(result.summary())
  expect(result.gaps).toEqual([])
  expect(result.truth.problems).toEqual([])
  expect(result.snapshots.flatMap((s) => s.errors)).toEqual([])
  expect(result.converged).toBe(true)
  // Zero lost, zero counted twice: every dashboard shows exactly the truth recomputed from the readings, and every
  // device exactly the truth of its own readings (it writes its own room and never receives the others').
  expect(result.devicesShow).toBe('own')
  for (const page of result.snapshots) expect(page.digest).toBe(page.role === 'dashboard' ? result.truth.digest : result.deviceTruths[page.source]?.digest)
  for (const count of result.dashboardCounts) expect(count).toBe(result.truth.counted)
  // The late lanes account for every reading not counted, and the receipts agree.
  expect(result.truth.counted + result.truth.lateLane).toBe(result.truth.produced)
  expect(result.receipts).toEqual({ accepted: result.truth.counted, beyondLateness: result.truth.lateLane, duplicates: 0, rejected: 0 })
  expect(result.problems).toEqual([])
  // No page is left refused by the relay.
  expect(result.snapshots.filter((page) => page.refusal !== null).map((page) => `${page.source}: ${page.refusal}`)).toEqual([])
  // Every scheduled toggle reached the browser, and every device's page saw its network go and come back.
  expect(result.toggles.acknowledged).toBe(result.toggles.issued)
  for (const device of result.toggles.perDevice) expect(device.observed).toBeGreaterThanOrEqual(2)
  expect(result.truth.produced).toBeGreaterThan(0)
}
