/**
 * Bounded waits of the worker specs on what the tabs report, in place of fixed sleeps: a spec
 * waits for the state it needs (readings made durable), never for a span of wall-clock time.
 */
import { expect } from '@playwright/test'
import { collect, type Device, type StormLedger, type WorkerTab } from './workerDriver.ts'

/**
 * Waits (bounded) until every device's highest durable seq in `ledger` is at least `atLeast`
 * past its seq in `since` (0 when absent), collecting the tabs' reports into `ledger` as it
 * polls; returns every device's durable seq then. Only the devices' tabs are evaluated (none may
 * be frozen).
 *
 * @example
 * const atClose = await durableGrowth(ledger, devices, new Map(), 200, 'before the close')
 * await durableGrowth(ledger, devices, atClose, 200, 'through the takeover')
 */
export async function durableGrowth(
  ledger: StormLedger,
  devices: readonly Device[],
  since: ReadonlyMap<string, number>,
  atLeast: number,
  what: string,
  timeoutMs = 30_000,
): Promise<Map<string, number>> {
  const tabs: WorkerTab[] = [...new Set(devices.map((d) => d.tab))]
  const short = (): string[] =>
    devices
      .filter((d) => ledger.durable(d.source) - (since.get(d.source) ?? 0) < atLeast)
      .map((d) => `${d.source} durable to ${ledger.durable(d.source)}, from ${since.get(d.source) ?? 0}`)
  await expect
    .poll(
      async () => {
        await collect(ledger, tabs)
        return short()
      },
      { timeout: timeoutMs, message: `${what}: every device ${atLeast} readings more durable` },
    )
    .toEqual([])
  return new Map(devices.map((d) => [d.source, ledger.durable(d.source)]))
}
