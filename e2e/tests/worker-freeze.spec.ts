/**
 * Leader mode with a leader tab that freezes for real (raw CDP, `tests/workerRawCdp.ts`: a
 * hidden background tab, `Page.setWebLifecycleState frozen`). A frozen tab keeps its Web Locks
 * and its worker freezes with it, so only the missing heartbeats tell: a follower steals
 * leadership after 1.5 s, its host takes the log (raising the writer epoch) and the batches in
 * flight go to it. When the old leader thaws, it steps down, its host's writes are refused by
 * the epoch fence, and what it had sent goes to the new host: the ground truth holds exactly.
 */
import { expect, test } from '@playwright/test'
import type { WorkerPageInfo } from '../pages/workerPage.ts'
import { collect, type Device, expectGroundTruth, info, produce, StormLedger, stop, type WorkerTab } from './workerDriver.ts'
import { RawBrowser, type RawPage } from './workerRawCdp.ts'

const NO_SHARED_WORKER = 'delete globalThis.SharedWorker'

/**
 * Waits (bounded) until `tab` is connected to the host of `epoch`, as its leader or not when
 * `leader` says; a tab learns of a takeover by a task that may run after an evaluation reaches it.
 */
async function following(tab: WorkerTab, epoch: number, leader?: boolean): Promise<WorkerPageInfo> {
  let last: WorkerPageInfo = await info(tab)
  await expect
    .poll(
      async () => {
        last = await info(tab)
        const { state, epoch: heard } = last.connection
        return state === 'connected' && heard === epoch && (leader === undefined || last.connection.leader === leader)
      },
      { timeout: 10_000, message: `${tab.label} never followed the host of epoch ${epoch}` },
    )
    .toBe(true)
  return last
}

function tabOf(page: RawPage, label: string): WorkerTab {
  return { label, evaluate: (expression) => page.evaluate(expression) }
}

test('a frozen leader tab is replaced within a bounded time; when it thaws it steps down, and the ground truth holds', async ({ baseURL }) => {
  const browser = new RawBrowser()
  try {
    const url = `${baseURL}/worker.html`
    const open = async (label: string, newWindow: boolean): Promise<{ page: RawPage; tab: WorkerTab }> => {
      const page = await browser.open(url, { newWindow, initScript: NO_SHARED_WORKER })
      await page.waitFor("document.getElementById('status')?.textContent === 'ready'")
      return { page, tab: tabOf(page, label) }
    }
    const a = await open('A', false)
    // A tab opened over A in its window puts A in the background (hidden): only then can it freeze.
    await browser.send('Target.createTarget', { url: 'about:blank', newWindow: false })
    await a.page.waitFor("document.visibilityState === 'hidden'")
    const b = await open('B', true)
    const c = await open('C', true)
    const before = await Promise.all([a, b, c].map((o) => info(o.tab)))
    expect(before.map((i) => [i.sharedWorker, i.connection.mode, i.connection.leader])).toEqual([
      [false, 'leader', true],
      [false, 'leader', false],
      [false, 'leader', false],
    ])

    const ledger = new StormLedger()
    const devices: Device[] = [
      { tab: a.tab, source: 'device-a', seed: 31 },
      { tab: b.tab, source: 'device-b', seed: 32 },
      { tab: c.tab, source: 'device-c', seed: 33 },
    ]
    for (const device of devices) await produce(device)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    const frozenAt = Date.now()
    await a.page.freeze()

    // One follower steals leadership after the heartbeats stop; the other moves to its host.
    let newLeader: WorkerTab | null = null
    await expect
      .poll(
        async () => {
          for (const tab of [b.tab, c.tab]) if ((await info(tab)).connection.leader) newLeader = tab
          return newLeader !== null
        },
        { timeout: 20_000 },
      )
      .toBe(true)
    const takeover = await Promise.all([following(b.tab, 2), following(c.tab, 2)])
    const welcomed = Math.min(...takeover.map((i) => i.hosts.at(-1)?.at ?? Number.NaN))
    await new Promise((resolve) => setTimeout(resolve, 2_000))

    const thawedAt = Date.now()
    await a.page.thaw()
    // The old leader steps down at the first beat of the newer host it hears, or when its lock
    // request fails, whichever comes first; either may run after the first evaluation reaches it.
    const thawed = await following(a.tab, 2, false)
    expect(thawed.lifecycle.map((l) => l.event)).toContain('freeze')
    const produced = new Map<string, number>()
    for (const device of devices) produced.set(device.source, await stop(device))
    await collect(ledger, [a.tab, b.tab, c.tab])
    const figures = await expectGroundTruth(ledger, devices, produced, [a.tab, b.tab, c.tab])
    console.log(
      `worker-freeze: leader frozen; follower ${(newLeader as WorkerTab | null)?.label} took over, its host welcomed the followers ${welcomed - frozenAt} ms after the freeze; ` +
        `the old leader followed the new host ${(thawed.hosts.at(-1)?.at ?? Number.NaN) - frozenAt} ms after the freeze, and was thawed ${thawedAt - frozenAt} ms after it; ` +
        `produced ${figures.produced}, ${figures.counted} counted, ${figures.lateLane} late lane`,
    )
  } finally {
    await browser.close()
  }
})
