import 'fake-indexeddb/auto'
import type { Engine } from '@tidemark/engine'
import { afterEach, describe, expect, it } from 'vitest'
import { type DeviceLocks, pageDeviceLocks } from '../src/fleet/deviceLocks.ts'
import type { DeviceStatus } from '../src/fleet/deviceStatus.ts'
import { DeviceTab } from '../src/fleet/deviceTab.ts'
import { Fleet } from '../src/fleet/fleet.ts'
import { DEFAULT_SETTINGS, type FleetSettings, windowIdOf } from '../src/fleet/fleetSettings.ts'
import { memoryPages, until } from './memoryPages.ts'

const T0 = 1_800_000_000_000
const fleets: Fleet[] = []

afterEach(async () => {
  await Promise.all(fleets.splice(0).map((fleet) => fleet.close()))
})

/** A fleet on a fake clock, its devices' documents linked through in-memory tab channels; `advance(ms)` ticks every 100 ms. */
async function fakeFleet(settings: Partial<FleetSettings> = {}, intro = false) {
  const clock = { now: T0 }
  const pages = memoryPages()
  const fleet = new Fleet({ wiring: pages.wiring, settings: { ...DEFAULT_SETTINGS, deviceCount: 4, ...settings }, now: () => clock.now, intro })
  fleets.push(fleet)
  await fleet.ready()
  pages.flush()
  /** Ticks every 100 ms of fake time, letting each tick's log commits land (writes reach the documents once durable). */
  const advance = async (ms: number): Promise<void> => {
    for (const end = clock.now + ms; clock.now < end; ) {
      clock.now += 100
      fleet.tick(clock.now)
      await pages.settle(() => uncommitted(fleet))
    }
  }
  /** The device's status now (the snapshot's rows refresh on ticks only). */
  const device = (id: string) => {
    const status = fleet.slot(id)?.status(clock.now)
    if (status == null) throw new Error(`no status for ${id}`)
    return status
  }
  const engineOf = (id: string): Engine => {
    const engine = fleet.slot(id)?.node?.engine
    if (engine == null) throw new Error(`${id} has no engine here`)
    return engine
  }
  return { fleet, clock, pages, advance, device, engineOf }
}

/** True while a device running in `fleet`'s page has accepted readings not yet committed to its log. */
function uncommitted(fleet: Fleet, also: readonly (DeviceStatus | null | undefined)[] = []): boolean {
  const statuses = [...fleet.snapshot().devices.map((row) => fleet.slot(row.id)?.node?.status()), ...also]
  return statuses.some((status) => status != null && status.phase === 'running' && status.durable < status.accepted)
}

/**
 * One page's way to `manager`: its requests arrive only on `deliver()`, as a tab's Web Locks
 * requests travel apart from its BroadcastChannel messages and may arrive after them.
 * `queued()` goes the same way, so it resolves once the requests before it arrived.
 */
function laggingLocks(manager: DeviceLocks) {
  const inTransit: (() => void)[] = []
  const locks: DeviceLocks = {
    acquire: (name, signal) => new Promise((resolve, reject) => inTransit.push(() => manager.acquire(name, signal).then(resolve, reject))),
    queued: () => new Promise((resolve) => inTransit.push(() => resolve(manager.queued()))),
  }
  const deliver = (): void => {
    for (const arrive of inTransit.splice(0)) arrive()
  }
  return { locks, deliver }
}

/** Delivers the pages' messages while IndexedDB works (the tab asks once its lock request is queued), until `tab` runs its device. */
async function untilTabRuns(pages: ReturnType<typeof memoryPages>, tab: DeviceTab): Promise<void> {
  await until(() => {
    pages.flush()
    return tab.slot.where === 'here'
  }, `${tab.slot.id} runs in its tab`)
}

/** `(key, start) → count` of every window in `engines`, summed. */
function countsOf(engines: readonly Engine[], window: string): Map<string, number> {
  const counts = new Map<string, number>()
  for (const engine of engines) {
    for (const r of engine.results({ window })) counts.set(`${r.key}@${r.start}`, (counts.get(`${r.key}@${r.start}`) ?? 0) + r.count)
  }
  return counts
}

// Real engines, documents and (fake) IndexedDB over tens of simulated seconds: a safety net for a loaded machine, not a speed target.
describe('Fleet over Yjs documents', { timeout: 30_000 }, () => {
  it('fills the dashboard engine with windows merged from every device document, ingesting nothing itself', async () => {
    const { fleet, advance } = await fakeFleet()
    await advance(12_000)
    const { dashboard, settings, devices } = fleet.snapshot()
    const fired = dashboard.results({ window: windowIdOf(settings), key: 'temp' }).filter((r) => r.status !== 'provisional')
    expect(fired.length).toBeGreaterThan(3)
    expect(fired.some((r) => r.basis === 'proven')).toBe(true)
    const stats = dashboard.stats()
    expect(stats.sources).toBe(4)
    expect(stats.ingested).toBe(0)
    expect(stats.docBytes).toBeGreaterThan(0)
    expect(devices).toHaveLength(4)
    expect(devices.every((row) => row.where === 'here' && row.status?.syncState === 'connected' && row.lastHeard !== null)).toBe(true)
  })

  it('a device offline keeps ingesting into its log; back online, its document catches up and corrects fired windows', async () => {
    const { fleet, advance, device, engineOf } = await fakeFleet()
    await advance(6_000)
    fleet.setOnline('d02', false)
    const offlineAt = fleet.snapshot().now
    await advance(7_000)
    expect(device('d02')).toMatchObject({ online: false, syncState: 'offline' })
    expect(device('d02').offlineReadings).toBeGreaterThan(0)
    expect(device('d02').pending).toBeGreaterThan(0)
    const { dashboard, settings } = fleet.snapshot()
    const window = windowIdOf(settings)
    // Without d02 the watermark moved on once it was idle: windows fired on a fallback basis.
    const withoutIt = dashboard.results({ window, key: 'temp', from: offlineAt }).filter((r) => r.status !== 'provisional')
    expect(withoutIt.some((r) => r.basis === 'fallback')).toBe(true)
    const correctionsBefore = dashboard.stats().corrections

    fleet.setOnline('d02', true)
    await advance(2_500)
    expect(device('d02')).toMatchObject({ online: true, syncState: 'connected', pending: 0 })
    expect(dashboard.stats().corrections).toBeGreaterThan(correctionsBefore)
    const corrected = dashboard.results({ window, key: 'temp', from: offlineAt }).filter((r) => r.revision > 0)
    expect(corrected.length).toBeGreaterThan(0)
    expect(fleet.snapshot().lateCorrections.length).toBeGreaterThan(0)
    expect(fleet.snapshot().activity.some((entry) => /^d02 back after \d+ s offline: \d+ readings .* [1-9]\d* window corrections/.test(entry.text))).toBe(true)
    // Nothing lost, nothing counted twice: every window is the sum of the devices' own windows.
    const devices = ['d01', 'd02', 'd03', 'd04'].map(engineOf)
    expect(countsOf([dashboard], window)).toEqual(countsOf(devices, window))
  })

  it('crash and reopen from IndexedDB loses no durable reading, and the device continues its seq without a gap', async () => {
    const { fleet, advance, device, engineOf, clock } = await fakeFleet()
    await advance(4_000)
    fleet.setOnline('d03', false)
    await advance(3_000)
    await until(() => device('d03').durable === device('d03').accepted, 'every d03 batch committed')
    const durable = device('d03').durable
    const applied = engineOf('d03').stats().applied
    expect(applied).toBe(durable)
    const seq = device('d03').seq

    fleet.crash('d03')
    expect(device('d03').phase).toBe('rebooting')
    await advance(1_600)
    await fleet.slot('d03')?.node?.whenRunning()
    const recovered = device('d03')
    expect(recovered.phase).toBe('running')
    expect(recovered.recovery).toMatchObject({ recoveredReadings: durable, lostEvents: 0, lossUnknown: false })
    expect(recovered.recovery?.replayedEvents).toBeGreaterThan(0)
    expect(recovered.recovery?.resumedAfterSeq).toBeLessThanOrEqual(seq)

    fleet.setOnline('d03', true)
    const backAt = clock.now
    const acceptedAtReboot = device('d03').accepted
    await advance(8_000)
    // Its new readings are new to its own engine (not taken for duplicates of what the log holds).
    expect(device('d03').accepted - acceptedAtReboot).toBeGreaterThan(30)
    const { dashboard, settings } = fleet.snapshot()
    const window = windowIdOf(settings)
    expect(countsOf([dashboard], window)).toEqual(countsOf(['d01', 'd02', 'd03', 'd04'].map(engineOf), window))
    // No seq gap: windows after the reboot are proven complete again.
    const later = dashboard.results({ window, key: 'temp', from: backAt + 2_000 }).filter((r) => r.status !== 'provisional')
    expect(later.some((r) => r.basis === 'proven')).toBe(true)
  })

  it('plays the tour: its device drops off, windows fire without it, and its catch-up corrects them before they are final', async () => {
    const { fleet, advance, device } = await fakeFleet({}, true)
    const tour = fleet.snapshot().introDevice as string
    await advance(8_000)
    expect(device(tour).online).toBe(false)
    await advance(10_000)
    expect(device(tour).online).toBe(true)
    await advance(3_000)
    const { dashboard, activity } = fleet.snapshot()
    expect(dashboard.stats().corrections).toBeGreaterThan(0)
    expect(dashboard.stats().finalityViolations).toBe(0)
    expect(activity.some((entry) => entry.text.startsWith(`${tour} back after`) && entry.tone === 'good')).toBe(true)
    expect(fleet.snapshot().introDevice).toBeNull()
  })

  it('counts every reading once through a reconnect storm', async () => {
    const { fleet, advance, engineOf } = await fakeFleet({ deviceCount: 8 })
    await advance(3_000)
    fleet.startStorm(12_000)
    await advance(13_000)
    expect(fleet.snapshot().storm).toBeNull()
    await advance(2_500)
    const { dashboard, settings, devices, activity } = fleet.snapshot()
    expect(devices).toHaveLength(8)
    expect(devices.every((row) => row.status?.online && row.status.pending === 0)).toBe(true)
    expect(activity.some((entry) => entry.text.startsWith('Reconnect storm over'))).toBe(true)
    const window = windowIdOf(settings)
    expect(countsOf([dashboard], window)).toEqual(countsOf(devices.map((row) => engineOf(row.id)), window))
    // Spells longer than the idle timeout let windows fire without a device; its catch-up corrects them.
    expect(dashboard.stats().corrections).toBeGreaterThan(0)
    expect(dashboard.stats().finalityViolations).toBe(0)
  })

  it('stops producing while paused', async () => {
    const { fleet, advance, device } = await fakeFleet()
    await advance(3_000)
    fleet.setPaused(true)
    const seq = device('d01').seq
    await advance(5_000)
    expect(device('d01').seq).toBe(seq)
    fleet.setPaused(false)
    await advance(2_000)
    expect(device('d01').seq - seq).toBeGreaterThan(0)
    expect(device('d01').seq - seq).toBeLessThanOrEqual(15)
  })

  it('reopens every engine in a new epoch when settings change', async () => {
    const { fleet, advance } = await fakeFleet()
    await advance(3_000)
    const before = fleet.snapshot()
    fleet.configure({ windowMs: 5_000, deviceCount: 6 })
    await fleet.ready()
    const after = fleet.snapshot()
    expect(after.dashboard).not.toBe(before.dashboard)
    expect(after.generation).toBe(before.generation + 1)
    expect(after.epoch).not.toBe(before.epoch)
    await advance(12_000)
    expect(fleet.snapshot().devices).toHaveLength(6)
    expect(after.dashboard.results({ window: 'tumbling:5000' }).length).toBeGreaterThan(0)
    expect(after.dashboard.stats().sources).toBe(6)
  })

  it('a ?device= tab takes its device over: the dashboard closes it cleanly, the tab continues from its log, its state reaches the dashboard', async () => {
    const clock = { now: T0 }
    const pages = memoryPages()
    const locks = pageDeviceLocks()
    const settings = { ...DEFAULT_SETTINGS, deviceCount: 3 }
    const fleet = new Fleet({ wiring: pages.wiring, settings, now: () => clock.now, intro: false, locks, control: pages.openControl() })
    fleets.push(fleet)
    await fleet.ready()
    const tab = new DeviceTab({ index: 1, settings, wiring: pages.wiring, now: () => clock.now, locks, control: pages.openControl() })
    const advance = async (ms: number): Promise<void> => {
      for (const end = clock.now + ms; clock.now < end; ) {
        clock.now += 100
        fleet.tick(clock.now)
        tab.tick(clock.now)
        await pages.settle(() => uncommitted(fleet, [tab.slot.node?.status()]))
      }
    }
    await advance(4_000)
    const inPage = fleet.slot('d02')?.node?.engine
    if (inPage == null) throw new Error('d02 should run in the dashboard page first')
    await until(() => fleet.slot('d02')?.status(clock.now)?.durable === fleet.slot('d02')?.status(clock.now)?.accepted, 'd02 committed')
    // Every reading it sampled so far, uploads due or not (seq is gap-free).
    const sampledHere = fleet.slot('d02')?.status(clock.now)?.seq ?? 0
    expect(sampledHere).toBeGreaterThan(inPage.stats().applied)

    tab.start()
    await untilTabRuns(pages, tab)
    expect(fleet.slot('d02')?.where).toBe('elsewhere')
    expect(tab.slot.where).toBe('here')
    // The dashboard closed it cleanly (its last upload, then a last checkpoint): the tab recovers every reading from the same log.
    expect(tab.slot.node?.status().recovery).toMatchObject({
      recoveredReadings: sampledHere,
      resumedAfterSeq: sampledHere,
      lostEvents: 0,
      replayedRecords: 0,
    })

    await advance(6_000)
    const row = fleet.snapshot().devices.find((r) => r.id === 'd02')
    expect(row).toMatchObject({ where: 'elsewhere', status: { id: 'd02', phase: 'running', online: true } })
    const engines = [fleet.slot('d01')?.node?.engine, tab.slot.node?.engine, fleet.slot('d03')?.node?.engine] as Engine[]
    const window = windowIdOf(settings)
    expect(countsOf([fleet.snapshot().dashboard], window)).toEqual(countsOf(engines, window))

    // A command from the dashboard reaches the tab through the control channel.
    fleet.setOnline('d02', false)
    pages.flush()
    expect(tab.slot.node?.online).toBe(false)
    await advance(7_000)
    fleet.setOnline('d02', true)
    await advance(3_000)
    // Its catch-up (through its document) corrected the windows the dashboard fired without it.
    expect(fleet.snapshot().activity.some((entry) => /^d02 back after \d+ s offline: \d+ readings .* [1-9]\d* window corrections/.test(entry.text))).toBe(true)

    await tab.close()
    await fleet.slot('d02')?.opened()
    expect(fleet.slot('d02')?.where).toBe('here')
  })

  it('a device handed to a tab before its first upload: the tab recovers the readings it sampled and continues after their seq', async () => {
    const clock = { now: T0 }
    const pages = memoryPages()
    const locks = pageDeviceLocks()
    const settings = { ...DEFAULT_SETTINGS, deviceCount: 3 }
    const fleet = new Fleet({ wiring: pages.wiring, settings, now: () => clock.now, intro: false, locks, control: pages.openControl() })
    fleets.push(fleet)
    await fleet.ready()
    // One tick: d02 sampled at once, but its first upload is not due yet.
    clock.now += 100
    fleet.tick(clock.now)
    const before = fleet.slot('d02')?.status(clock.now)
    expect(before).toMatchObject({ phase: 'running', accepted: 0 })
    const sampled = before?.seq ?? 0
    expect(sampled).toBeGreaterThan(0)

    const tab = new DeviceTab({ index: 1, settings, wiring: pages.wiring, now: () => clock.now, locks, control: pages.openControl() })
    tab.start()
    await untilTabRuns(pages, tab)
    expect(fleet.slot('d02')?.where).toBe('elsewhere')
    // The clean close uploaded what it had sampled: the tab finds it in the log, nothing lost, and goes on from there.
    expect(tab.slot.node?.status().recovery).toMatchObject({ recoveredReadings: sampled, resumedAfterSeq: sampled, lostEvents: 0 })
    await tab.close()
  })

  it('a tab asks for its device only once its lock request is queued, so the dashboard never takes the device back first', async () => {
    const clock = { now: T0 }
    const pages = memoryPages()
    const manager = pageDeviceLocks()
    const settings = { ...DEFAULT_SETTINGS, deviceCount: 3 }
    const fleet = new Fleet({ wiring: pages.wiring, settings, now: () => clock.now, intro: false, locks: manager, control: pages.openControl() })
    fleets.push(fleet)
    await fleet.ready()
    const tabLocks = laggingLocks(manager)
    const tab = new DeviceTab({ index: 1, settings, wiring: pages.wiring, now: () => clock.now, locks: tabLocks.locks, control: pages.openControl() })
    tab.start()
    // Whatever the tab posted arrives before its lock request; a dashboard that let d02 go and asked again has it back by now.
    pages.flush()
    await until(() => fleet.slot('d02')?.where === 'here', 'd02 runs in the dashboard page')
    tabLocks.deliver()
    await untilTabRuns(pages, tab)
    expect(fleet.slot('d02')?.where).toBe('elsewhere')
    await tab.close()
  })
})
