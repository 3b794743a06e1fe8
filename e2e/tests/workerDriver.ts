/**
 * What the worker specs share: a tab of the worker page (a Playwright page, or a raw CDP page
 * for real freezes) driven through `window.workerPage`, the durable ledger collected from the
 * tabs' reports, and the ground-truth check of `@tidemark/storm` over what they produced.
 */
import { expect } from '@playwright/test'
import { digestDiff, groundTruth, StormLedger, stormReading, type TruthFigures, tumblingTruth } from '@tidemark/storm'
import type { WorkerPageInfo, WorkerPageSnapshot } from '../pages/workerPage.ts'
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
 * late lane `tab` shows, and waits until every tab in `readers` shows exactly its window values.
 * Checks the ledger (when given) covered every seq exactly once, and that the late lane holds
 * exactly what is not counted.
 */
export async function expectGroundTruth(
  ledger: StormLedger | null,
  devices: readonly Device[],
  produced: ReadonlyMap<string, number>,
  readers: readonly WorkerTab[],
): Promise<TruthFigures> {
  const first = readers[0] as WorkerTab
  const lateIds = (await snapshot(first)).lateIds
  const figures = groundTruth(
    truth,
    devices.map((d) => ({ source: d.source, seed: d.seed, produced: produced.get(d.source) ?? 0, lateIds: lateIds[d.source] ?? [], firstBatchEnd: 20 })),
  )
  expect(figures.problems).toEqual([])
  if (ledger !== null) expect(ledger.totals(produced).gaps).toEqual([])
  expect(figures.counted + figures.lateLane).toBe(figures.produced)
  for (const reader of readers) {
    await expect
      .poll(async () => digestDiff(figures.digest, (await snapshot(reader)).digest), { timeout: 20_000, message: `${reader.label} shows other window values` })
      .toEqual([])
    expect((await snapshot(reader)).applied).toBe(figures.counted)
  }
  return figures
}

export { StormLedger }
