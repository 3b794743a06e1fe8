/**
 * Leader mode with a leader tab that freezes for real (raw CDP, `tests/workerRawCdp.ts`: a
 * hidden background tab, `Page.setWebLifecycleState frozen`). A frozen tab keeps its Web Locks
 * and its worker freezes with it.
 *
 * - Told: the browser fires `freeze` first, and the leader, knowing tabs wait behind it, hands
 *   leadership over as it freezes (its host ends, its lock is released): the next tab takes over
 *   as from a closed leader, with no steal.
 * - Untold (an init script swallows the event, as a hung or suspended tab gives none): only the
 *   missing heartbeats tell. A follower steals leadership after 1.5 s, its host takes the log
 *   (raising the writer epoch), and when the old leader thaws it steps down; its host's writes
 *   are refused by the epoch fence.
 *
 * Either way the batches in flight go to the new host and the ground truth holds exactly.
 */
import { expect, test } from '@playwright/test'
import type { WorkerPageInfo } from '../pages/workerPage.ts'
import { collect, type Device, expectGroundTruth, info, produce, StormLedger, stop, type WorkerTab } from './workerDriver.ts'
import { RawBrowser, type RawPage } from './workerRawCdp.ts'
import { durableGrowth } from './workerWaits.ts'

const NO_SHARED_WORKER = 'delete globalThis.SharedWorker'
/** Swallows the page's `freeze` event before any listener hears it (counting it), as a tab frozen without one. */
const UNTOLD_FREEZE =
  "window.__swallowedFreezes = 0; window.addEventListener('freeze', (event) => { window.__swallowedFreezes++; event.stopImmediatePropagation() }, { capture: true })"
/**
 * Readings (20 a batch) each device has durable before the leader freezes (A, hidden, produces
 * on throttled timers: about a batch a second), and readings the new host applies while the old
 * leader stays frozen.
 */
const DURABLE_BEFORE_FREEZE = 40
const APPLIED_WHILE_FROZEN = 800

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

for (const told of [true, false]) {
  const how = told ? 'that says it freezes hands over at once' : 'frozen without a word is stolen from after 1.5 s of silence'
  test(`a leader tab ${how}; when it thaws it follows the new host, and the ground truth holds`, async ({ baseURL }) => {
    await freezeLeader(baseURL as string, told)
  })
}

async function freezeLeader(baseURL: string, told: boolean): Promise<void> {
  const browser = new RawBrowser()
  try {
    const url = `${baseURL}/worker.html`
    const open = async (label: string, newWindow: boolean): Promise<{ page: RawPage; tab: WorkerTab }> => {
      const page = await browser.open(url, { newWindow, initScript: label === 'A' && !told ? `${NO_SHARED_WORKER}; ${UNTOLD_FREEZE}` : NO_SHARED_WORKER })
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
    // Mid-stream: every device, the leader's included, has readings durable before the freeze.
    await durableGrowth(ledger, devices, new Map(), DURABLE_BEFORE_FREEZE, 'before the leader freezes')
    const frozenAt = Date.now()
    await a.page.freeze()

    // One follower leads (handed over, or stolen after the heartbeats stop); the other moves to its host.
    let newLeader: WorkerTab | null = null
    let seen: unknown[] = []
    const takesOver = async (timeout: number): Promise<boolean> =>
      expect
        .poll(
          async () => {
            seen = []
            for (const tab of [b.tab, c.tab]) {
              const now = await info(tab)
              seen.push({ tab: tab.label, connection: now.connection, steals: now.steals })
              if (now.connection.leader && now.connection.state === 'connected') newLeader = tab
            }
            return newLeader !== null
          },
          { timeout },
        )
        .toBe(true)
        .then(
          () => true,
          () => false,
        )
    let thawedAt: number | null = null
    if (!(await takesOver(told ? 20_000 : 10_000))) {
      // Frozen without a word in the middle of an IndexedDB write, the old leader's worker holds
      // the log's transaction open, and the stealer's host cannot claim the log until it thaws
      // (the worker README's limits). A steal must have been announced; thawed, the old leader
      // lets the log go.
      const steals = (await Promise.all([b.tab, c.tab].map(async (tab) => (await info(tab)).steals))).flat()
      if (told || steals.length === 0) throw new Error(`no follower took over; the followers: ${JSON.stringify(seen)}`)
      thawedAt = Date.now()
      await a.page.thaw()
      if (!(await takesOver(20_000))) throw new Error(`no follower took over after the thaw; the followers: ${JSON.stringify(seen)}`)
    }
    const takeover = await Promise.all([following(b.tab, 2), following(c.tab, 2)])
    const welcomed = Math.min(...takeover.map((i) => i.hosts.at(-1)?.at ?? Number.NaN))
    const leading = newLeader as unknown as WorkerTab
    if (thawedAt === null) {
      // The old leader stays frozen while the followers go on producing into the new host.
      const appliedAtTakeover = (await info(leading)).applied
      await expect
        .poll(async () => (await info(leading)).applied - appliedAtTakeover, {
          timeout: 30_000,
          message: `readings the new host (${leading.label}) applied while the old leader is frozen`,
        })
        .toBeGreaterThanOrEqual(APPLIED_WHILE_FROZEN)
      thawedAt = Date.now()
      await a.page.thaw()
    }
    // The old leader steps down at the first beat of the newer host it hears, or when its lock
    // request fails, whichever comes first; either may run after the first evaluation reaches it.
    const thawed = await following(a.tab, 2, false)
    const heard = await Promise.all([b.tab, c.tab].map(async (tab) => (await info(tab)).steals))
    if (told) {
      expect(thawed.lifecycle.map((l) => l.event)).toContain('freeze')
      expect(heard.flat()).toEqual([])
    } else {
      expect(await a.page.evaluate<number>('window.__swallowedFreezes')).toBeGreaterThan(0)
      expect(thawed.lifecycle.map((l) => l.event)).not.toContain('freeze')
      // Steals from the first host only, each announced to every tab (the stealer's own page
      // listener hears it too): one, or one every four times staleMs while the log stayed blocked.
      const [fromB, fromC] = heard.map((steals) => steals.map((steal) => steal.epoch))
      expect(fromB?.length).toBeGreaterThan(0)
      expect(fromB).toEqual(fromC)
      expect(new Set(fromB)).toEqual(new Set([1]))
    }
    const produced = new Map<string, number>()
    for (const device of devices) produced.set(device.source, await stop(device))
    await collect(ledger, [a.tab, b.tab, c.tab])
    const figures = await expectGroundTruth(ledger, devices, produced, [a.tab, b.tab, c.tab])
    console.log(
      `worker-freeze (${told ? 'told' : 'untold'}): leader frozen; follower ${(newLeader as WorkerTab | null)?.label} took over, its host welcomed the followers ${welcomed - frozenAt} ms after the freeze; ` +
        `the old leader followed the new host ${(thawed.hosts.at(-1)?.at ?? Number.NaN) - frozenAt} ms after the freeze, and was thawed ${thawedAt - frozenAt} ms after it${heard[0] !== undefined && heard[0].length > 1 ? ` (its log write held the log: ${heard[0].length} steals)` : ''}; ` +
        `produced ${figures.produced}, ${figures.counted} counted, ${figures.lateLane} late lane`,
    )
  } finally {
    await browser.close()
  }
}
