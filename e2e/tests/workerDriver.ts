/**
 * What the worker specs share: a tab of the worker page (a Playwright page, or a raw CDP page
 * for real freezes) driven through `window.workerPage`, the durable ledger collected from the
 * tabs' reports, and the ground-truth check of `@tidemark/storm` over what they produced.
 */
import { expect } from '@playwright/test'
import { digestDiff, groundTruth, StormLedger, stormReading, type TruthFigures, tumblingTruth } from '@tidemark/storm'
import type { WorkerPageInfo } from '../pages/workerPage.ts'
import type { WorkerPageSnapshot } from '../pages/workerSnapshot.ts'
import { WORKER_LATENESS_MS, WORKER_WINDOW_MS } from '../pages/workerConfig.ts'

/** The worker page's readings and window values. */
export const truth = tumblingTruth({ windowMs: WORKER_WINDOW_MS, allowedLateness: WORKER_LATENESS_MS, reading: stormReading })

/** One tab: evaluates an expression in the page (awaiting a promise) and returns its JSON value. */
export interface WorkerTab {
  readonly label: string
  evaluate<T>(expression: string): Promise<T>
}

/** A device: the tab producing it, its source and seed. */
export interface Device {
  readonly tab: WorkerTab
  readonly source: string
  readonly seed: number
}

export const info = (tab: WorkerTab): Promise<WorkerPageInfo> => tab.evaluate('window.workerPage.info()')
export const snapshot = (tab: WorkerTab): Promise<WorkerPageSnapshot> => tab.evaluate('window.workerPage.snapshot()')

export function produce(device: Device, batch = 20, everyMs = 50): Promise<void> {
  return device.tab.evaluate(`window.workerPage.produce(${JSON.stringify({ source: device.source, seed: device.seed, batch, everyMs })})`)
}

/** Stops a device; resolves once every batch it produced is durable, with the last seq. */
export async function stop(device: Device): Promise<number> {
  const stopped = await device.tab.evaluate<{ produced: number; errors: string[] }>('window.workerPage.stop()')
  expect(stopped.errors, `${device.tab.label}: failed batches`).toEqual([])
  return stopped.produced
}

/** Moves every report the tabs hold into the ledger. */
export async function collect(ledger: StormLedger, tabs: readonly WorkerTab[]): Promise<void> {
  for (const tab of tabs) ledger.record(await tab.evaluate('window.workerPage.takeReports()'))
}

/** Waits until `tab` says it is connected, and returns what it says. */
export async function connected(tab: WorkerTab, timeoutMs = 20_000): Promise<WorkerPageInfo> {
  let last: WorkerPageInfo | null = null
  await expect
    .poll(
      async () => {
        last = await info(tab)
        return last.connection.state
      },
      { timeout: timeoutMs, message: `${tab.label} never connected` },
    )
    .toBe('connected')
  return last as unknown as WorkerPageInfo
}

/**
 * The ground truth of what `devices` produced (`produced` per source: seqs 1..n), with the
 * late lane the first of `readers` shows, and waits until every tab in `readers` shows exactly
 * its window values. Checks the ledger (when given) covered every seq exactly once, and that the
 * late lane holds exactly what is not counted.
 *
 * A batch's durable receipt can reach its page before the frame that shows what the batch did
 * (the host sends frames at its next tick), so the lane a page shows right after `stop()` may
 * lack the last batches' late entries: the truth is taken again from each snapshot until the
 * lane and the windows agree with it, or the wait ends.
 */
export async function expectGroundTruth(
  ledger: StormLedger | null,
  devices: readonly Device[],
  produced: ReadonlyMap<string, number>,
  readers: readonly WorkerTab[],
): Promise<TruthFigures> {
  const first = readers[0] as WorkerTab
  const truthOf = (view: WorkerPageSnapshot): TruthFigures =>
    groundTruth(
      truth,
      devices.map((d) => ({ source: d.source, seed: d.seed, produced: produced.get(d.source) ?? 0, lateIds: view.lateIds[d.source] ?? [], firstBatchEnd: 20 })),
    )
  let figures = truthOf(await snapshot(first))
  const settled = async (reader: WorkerTab): Promise<string[]> => {
    const view = await snapshot(reader)
    if (reader === first) figures = truthOf(view)
    return [...figures.problems, ...digestDiff(figures.digest, view.digest)]
  }
  for (const reader of readers) {
    await expect
      .poll(() => settled(reader), { timeout: 20_000, message: `${reader.label} shows other window values` })
      .toEqual([])
      .catch(async (error: unknown) => {
        await explainMismatch(figures, devices, readers)
        throw error
      })
  }
  if (ledger !== null) expect(ledger.totals(produced).gaps).toEqual([])
  expect(figures.counted + figures.lateLane).toBe(figures.produced)
  // The first tab's lane stays what the truth was taken from; every tab counts what it says.
  expect(truthOf(await snapshot(first)).digest).toBe(figures.digest)
  for (const reader of readers) expect((await snapshot(reader)).applied).toBe(figures.counted)
  return figures
}

/** Logs how each page's mirror and the host's own engine differ from the ground truth, and their late lanes against each other. */
async function explainMismatch(figures: TruthFigures, devices: readonly Device[], readers: readonly WorkerTab[]): Promise<void> {
  const host = await (readers[0] as WorkerTab).evaluate<WorkerPageSnapshot>('window.workerPage.command("snapshot")').catch((error: unknown) => String(error))
  const views: [string, WorkerPageSnapshot | string][] = [['host', host], ...(await Promise.all(readers.map(async (r): Promise<[string, WorkerPageSnapshot]> => [r.label, await snapshot(r)])))]
  for (const [label, view] of views) {
    if (typeof view === 'string') {
      console.log(`[mismatch] ${label}: ${view}`)
      continue
    }
    const lanes = devices.map((d) => `${d.source} [${(view.lateIds[d.source] ?? []).join(' ')}]`).join('; ')
    console.log(`[mismatch] ${label}: applied ${view.applied} (truth ${figures.counted}), ${view.windows} windows; against the truth: ${JSON.stringify(digestDiff(figures.digest, view.digest))}; late lane: ${lanes}`)
  }
}

export { StormLedger }
