/**
 * The fleet with its hosts run in this process (`inProcessHosts`: the same host options as the
 * workers, on a fake clock), its devices' documents linked through in-memory tab channels.
 */
import 'fake-indexeddb/auto'
import { type Engine, invalidReason, type StreamEvent } from '@tidemark/engine'
import { afterEach, describe, expect, it } from 'vitest'
import type { DeviceStatus } from '../src/fleet/deviceStatus.ts'
import { DeviceTab } from '../src/fleet/deviceTab.ts'
import { Fleet } from '../src/fleet/fleet.ts'
import { deliveryLatencyOf } from '../src/fleet/fleetAggregates.ts'
import { DEFAULT_SETTINGS, type FleetSettings, windowIdOf } from '../src/fleet/fleetSettings.ts'
import { DEVICES_MEASURE, type FleetResult, LATENCY_MEASURE, measureText } from '../src/ui/chartMeasure.ts'
import { onTimeValueOf } from '../src/ui/chartWindows.ts'
import { type InProcessEngine, inProcessHosts } from './inProcessHosts.ts'
import { memoryPages, until } from './memoryPages.ts'

const T0 = 1_800_000_000_000
const fleets: Fleet[] = []
const tabs: DeviceTab[] = []
const worlds: ReturnType<typeof inProcessHosts>[] = []

afterEach(async () => {
  await Promise.all(tabs.splice(0).map((tab) => tab.close()))
  await Promise.all(fleets.splice(0).map((fleet) => fleet.close()))
  await Promise.all(worlds.splice(0).map((world) => world.shutdown()))
})

/**
 * A fleet on a fake clock; `advance(ms)` ticks every 100 ms (hosts' timers, then the page),
 * letting each tick's log commits land (writes reach the documents once durable).
 */
async function fakeFleet(settings: Partial<FleetSettings> = {}, intro = false) {
  const clock = { now: T0 }
  const pages = memoryPages()
  const world = inProcessHosts({ now: () => clock.now, indexedDB: pages.indexedDB, transports: pages.transports })
  worlds.push(world)
  const all = { ...DEFAULT_SETTINGS, deviceCount: 4, ...settings }
  const fleet = new Fleet({ wiring: pages.wiring, hosts: world.hosts, settings: all, now: () => clock.now, intro, control: pages.openControl() })
  fleets.push(fleet)
  await fleet.ready()
  pages.flush()
  const extra: ((now: number) => void)[] = []
  /** The device's status straight from its live host (what its next poll would answer). */
  const hostStatus = (id: string): DeviceStatus | undefined => {
    const slot = fleet.slot(id) ?? tabs.find((tab) => tab.slot.id === id)?.slot
    return slot === undefined ? undefined : (world.call(slot.name, 'status') as DeviceStatus | undefined)
  }
  /** True while a live device host has accepted readings not yet committed to its log. */
  const uncommitted = (): boolean =>
    fleet.snapshot().devices.some((row) => {
      const status = hostStatus(row.id)
      return status !== undefined && status.durable < status.accepted
    })
  const advance = async (ms: number): Promise<void> => {
    for (const end = clock.now + ms; clock.now < end; ) {
      clock.now += 100
      world.tick(clock.now)
      fleet.tick(clock.now)
      for (const tick of extra) tick(clock.now)
      await pages.settle(uncommitted)
    }
  }
  /** The device's status as this page's slot gets it from the host now. */
  const device = async (id: string): Promise<DeviceStatus> => {
    const status = await fleet.slot(id)?.refresh()
    if (status == null) throw new Error(`no status for ${id}`)
    return status
  }
  /** The engine of device `id`'s live host (what its worker runs). */
  const engineOf = (id: string): Engine => {
    const name = fleet.slot(id)?.name ?? ''
    const engine = world.host(name)?.engine
    if (engine == null) throw new Error(`${id} has no live host`)
    return engine
  }
  const dashboard = () => {
    const engine = fleet.snapshot().dashboard
    if (engine === null) throw new Error('the dashboard engine has no host')
    return engine
  }
  return { fleet, clock, pages, world, advance, device, engineOf, dashboard, hostStatus, extra, settings: all }
}

/** `(key, start) → count` of every window in `engines`, summed. */
function countsOf(engines: readonly Pick<Engine, 'results'>[], window: string): Map<string, number> {
  const counts = new Map<string, number>()
  for (const engine of engines) {
    for (const r of engine.results({ window })) counts.set(`${r.key}@${r.start}`, (counts.get(`${r.key}@${r.start}`) ?? 0) + r.count)
  }
  return counts
}

/**
 * What a window of `key` should show, from the readings the devices' engines were given: each
 * reading once (by source and seq), malformed ones left out. `p95`: the value of rank
 * ⌊0.95 × (n − 1)⌋ of their delivery latencies, the quantile the engine's sketch approximates.
 */
function expectedAggregates(ingested: readonly StreamEvent[], key: string, start: number, end: number): { devices: number; p95: number } {
  const readings = new Map<string, StreamEvent>()
  for (const event of ingested) {
    if (event.seq === undefined || invalidReason(event) !== null || event.key !== key || event.ts < start || event.ts >= end) continue
    readings.set(`${event.source}#${event.seq}`, event)
  }
  const latencies = [...readings.values()].map(deliveryLatencyOf).sort((a, b) => a - b)
  return { devices: new Set([...readings.values()].map((event) => event.source)).size, p95: latencies[Math.floor(0.95 * (latencies.length - 1))] ?? Number.NaN }
}

/** The chart's p95 (seconds) is the readings' p95 within the sketch's 1% (and a millisecond for latencies near zero). */
function expectP95(result: FleetResult, p95Ms: number): void {
  const shown = LATENCY_MEASURE.valueOf(result)
  expect(shown, `p95 of the window at ${result.start}`).not.toBeNull()
  expect(Math.abs((shown as number) * 1_000 - p95Ms), `p95 of the window at ${result.start}: ${shown} s, readings' ${p95Ms} ms`).toBeLessThanOrEqual(Math.abs(p95Ms) * 0.01 + 1)
}

// Real engines, documents and (fake) IndexedDB over tens of simulated seconds: a safety net for a loaded machine, not a speed target.
describe('Fleet over Yjs documents, each engine in its host', { timeout: 30_000 }, () => {
  it('fills the dashboard engine with windows merged from every device document, ingesting nothing itself', async () => {
    const { fleet, advance, world, dashboard } = await fakeFleet()
    await advance(12_000)
    const { settings, devices } = fleet.snapshot()
    const fired = dashboard()
      .results({ window: windowIdOf(settings), key: 'temp' })
      .filter((r) => r.status !== 'provisional')
    expect(fired.length).toBeGreaterThan(3)
    expect(fired.some((r) => r.basis === 'proven')).toBe(true)
    const stats = dashboard().stats()
    expect(stats.sources).toBe(4)
    expect(stats.ingested).toBe(0)
    expect(stats.docBytes).toBeGreaterThan(0)
    expect(devices).toHaveLength(4)
    expect(devices.every((row) => row.host.state === 'connected' && row.status?.phase === 'running' && row.status.syncState === 'connected' && row.lastHeard !== null)).toBe(true)
    // A host per device and one for the dashboard, each its own instance.
    expect(world.started()).toBe(5)
    expect(new Set(devices.map((row) => row.host.instance)).size).toBe(4)
  })

  it('a device offline keeps ingesting into its log; back online, its document catches up and corrects fired windows', async () => {
    const { fleet, advance, device, engineOf, dashboard } = await fakeFleet()
    await advance(6_000)
    fleet.setOnline('d02', false)
    const offlineAt = fleet.snapshot().now
    await advance(7_000)
    expect(await device('d02')).toMatchObject({ online: false, syncState: 'offline' })
    expect((await device('d02')).offlineReadings).toBeGreaterThan(0)
    expect((await device('d02')).pending).toBeGreaterThan(0)
    const window = windowIdOf(fleet.snapshot().settings)
    // Without d02 the watermark moved on once it was idle: windows fired on a fallback basis.
    const withoutIt = dashboard()
      .results({ window, key: 'temp', from: offlineAt })
      .filter((r) => r.status !== 'provisional')
    expect(withoutIt.some((r) => r.basis === 'fallback')).toBe(true)
    const correctionsBefore = dashboard().stats().corrections

    fleet.setOnline('d02', true)
    await advance(2_500)
    expect(await device('d02')).toMatchObject({ online: true, syncState: 'connected', pending: 0 })
    expect(dashboard().stats().corrections).toBeGreaterThan(correctionsBefore)
    const corrected = dashboard()
      .results({ window, key: 'temp', from: offlineAt })
      .filter((r) => r.revision > 0)
    expect(corrected.length).toBeGreaterThan(0)
    expect(fleet.snapshot().lateCorrections.length).toBeGreaterThan(0)
    expect(fleet.snapshot().activity.some((entry) => /^d02 back after \d+ s offline: \d+ readings .* [1-9]\d* window corrections/.test(entry.text))).toBe(true)
    // Nothing lost, nothing counted twice: every window is the sum of the devices' own windows.
    const devices = ['d01', 'd02', 'd03', 'd04'].map(engineOf)
    expect(countsOf([dashboard()], window)).toEqual(countsOf(devices, window))

    // The mirror handing corrected windows out again (a history that arrived) is no new correction.
    const listed = fleet.snapshot().lateCorrections
    ;(dashboard() as InProcessEngine).echoCorrections()
    await advance(100)
    expect(fleet.snapshot().lateCorrections).toEqual(listed)
  })

  it('shows per window the devices that reported and the p95 delivery latency of their readings; an offline device back corrects them, with the value shown on time', async () => {
    const { fleet, advance, world, dashboard } = await fakeFleet()
    const ingested = (): StreamEvent[] => ['d01', 'd02', 'd03', 'd04'].flatMap((id) => world.host(fleet.slot(id)?.name ?? '')?.ingested ?? [])
    await advance(6_000)
    const window = windowIdOf(fleet.snapshot().settings)
    const fired = dashboard()
      .results({ window, key: 'temp' })
      .filter((r) => r.status !== 'provisional' && r.count > 0)
    expect(fired.length).toBeGreaterThan(1)
    for (const result of fired) {
      const expected = expectedAggregates(ingested(), 'temp', result.start, result.end)
      expect(result.aggregates.devices, `devices at ${result.start}`).toBe(expected.devices)
      expectP95(result, expected.p95)
    }
    // All four report in a full window; readings wait up to an upload period (about 1 s) on their device.
    const full = fired.at(-1) as FleetResult
    expect(measureText(DEVICES_MEASURE, full)).toBe('4 devices')
    expect(measureText(LATENCY_MEASURE, full)).toMatch(/^(0\.[5-9]\d|1\.[0-3]\d) s$/)

    fleet.setOnline('d02', false)
    const offlineAt = fleet.snapshot().now
    await advance(7_000)
    const withoutIt = dashboard()
      .results({ window, key: 'temp', from: offlineAt + 2_000 })
      .filter((r) => r.status === 'on_time' && r.basis === 'fallback')
    expect(withoutIt.length).toBeGreaterThan(0)
    for (const result of withoutIt) expect(measureText(DEVICES_MEASURE, result)).toBe('3 devices')
    const firedWithout = new Set(withoutIt.map((r) => r.start))

    fleet.setOnline('d02', true)
    await advance(2_500)
    const corrected = dashboard()
      .results({ window, key: 'temp', from: offlineAt + 2_000 })
      .filter((r) => firedWithout.has(r.start))
    expect(corrected.length).toBe(firedWithout.size)
    for (const result of corrected) {
      const expected = expectedAggregates(ingested(), 'temp', result.start, result.end)
      expect(result.revision, `window at ${result.start}`).toBeGreaterThan(0)
      // What the chart draws: a ring at the on-time value, the dot at the corrected one.
      expect(onTimeValueOf(dashboard(), result, DEVICES_MEASURE)).toBe(3)
      expect(measureText(DEVICES_MEASURE, result)).toBe('4 devices')
      expect(expected.devices).toBe(4)
      expectP95(result, expected.p95)
    }
  })

  it('a crash ends the host without close; the next host recovers every durable reading, keeps the switches and continues the seq without a gap', async () => {
    const { fleet, advance, device, engineOf, clock, dashboard } = await fakeFleet()
    await advance(4_000)
    fleet.setOnline('d03', false)
    await advance(3_000)
    const before = await device('d03')
    expect(before.durable).toBe(before.accepted)
    const applied = engineOf('d03').stats().applied
    expect(applied).toBe(before.durable)
    const slot = fleet.slot('d03')
    if (slot === undefined) throw new Error('no d03')
    const firstHost = slot.host.instance

    await fleet.crash('d03')
    expect(fleet.snapshot().activity[0]?.text).toMatch(/^d03 crashed: its host worker ended without closing its engine; \d+ readings sampled or ingested and not yet durable died with it/)
    await until(() => slot.host.state === 'connected' && slot.host.restarts === 1 && slot.statusHost === slot.host.instance, 'd03 booted on its next host')
    expect(slot.host.instance).not.toBe(firstHost)
    const recovered = await device('d03')
    // The page booted the new host with its switches: still offline, producing.
    expect(recovered).toMatchObject({ phase: 'running', online: false, paused: false })
    expect(recovered.recovery).toMatchObject({ recoveredReadings: applied, lostEvents: 0, lossUnknown: false })
    expect(recovered.recovery?.replayedEvents).toBeGreaterThan(0)
    expect(recovered.recovery?.resumedAfterSeq).toBeLessThanOrEqual(before.seq)
    await advance(200)
    expect(fleet.snapshot().activity.some((entry) => entry.text.startsWith(`d03's host is back (shared worker ${slot.host.instance.slice(0, 8)}): recovered ${applied} readings`))).toBe(true)

    fleet.setOnline('d03', true)
    const backAt = clock.now
    await advance(8_000)
    // Its new readings are new to its own engine (not taken for duplicates of what the log holds).
    expect((await device('d03')).accepted).toBeGreaterThan(30)
    const window = windowIdOf(fleet.snapshot().settings)
    expect(countsOf([dashboard()], window)).toEqual(countsOf(['d01', 'd02', 'd03', 'd04'].map(engineOf), window))
    // No seq gap: windows after the reboot are proven complete again.
    const later = dashboard()
      .results({ window, key: 'temp', from: backAt + 2_000 })
      .filter((r) => r.status !== 'provisional')
    expect(later.some((r) => r.basis === 'proven')).toBe(true)
  })

  it('plays the tour: its device drops off, windows fire without it, and its catch-up corrects them before they are final', async () => {
    const { fleet, advance, device, dashboard } = await fakeFleet({}, true)
    const tour = fleet.snapshot().introDevice as string
    await advance(8_000)
    expect((await device(tour)).online).toBe(false)
    await advance(10_000)
    expect((await device(tour)).online).toBe(true)
    await advance(3_000)
    expect(dashboard().stats().corrections).toBeGreaterThan(0)
    expect(dashboard().stats().finalityViolations).toBe(0)
    expect(fleet.snapshot().activity.some((entry) => entry.text.startsWith(`${tour} back after`) && entry.tone === 'good')).toBe(true)
    expect(fleet.snapshot().introDevice).toBeNull()
  })

  it('counts every reading once through a reconnect storm', async () => {
    const { fleet, advance, engineOf, dashboard } = await fakeFleet({ deviceCount: 8 })
    await advance(3_000)
    fleet.startStorm(12_000)
    await advance(13_000)
    expect(fleet.snapshot().storm).toBeNull()
    await advance(2_500)
    const { settings, devices, activity } = fleet.snapshot()
    expect(devices).toHaveLength(8)
    expect(devices.every((row) => row.status?.online && row.status.pending === 0)).toBe(true)
    expect(activity.some((entry) => entry.text.startsWith('Reconnect storm over'))).toBe(true)
    const window = windowIdOf(settings)
    expect(countsOf([dashboard()], window)).toEqual(countsOf(devices.map((row) => engineOf(row.id)), window))
    // Spells longer than the idle timeout let windows fire without a device; its catch-up corrects them.
    expect(dashboard().stats().corrections).toBeGreaterThan(0)
    expect(dashboard().stats().finalityViolations).toBe(0)
  })

  it('stops producing while paused', async () => {
    const { fleet, advance, device } = await fakeFleet()
    await advance(3_000)
    fleet.setPaused(true)
    await advance(100)
    const seq = (await device('d01')).seq
    expect(await device('d01')).toMatchObject({ paused: true })
    await advance(5_000)
    expect((await device('d01')).seq).toBe(seq)
    fleet.setPaused(false)
    await advance(2_000)
    expect((await device('d01')).seq - seq).toBeGreaterThan(0)
    expect((await device('d01')).seq - seq).toBeLessThanOrEqual(15)
  })

  it('a new epoch retires every host and starts those of the new settings; a new fleet size keeps the devices that stay', async () => {
    const { fleet, advance, world } = await fakeFleet()
    await advance(3_000)
    const before = fleet.snapshot()
    const d01 = fleet.slot('d01')?.host.instance
    fleet.configure({ deviceCount: 6 })
    await fleet.ready()
    await advance(1_000)
    // The same epoch: d01–d04 run on in the hosts they had, d05 and d06 get hosts, and a dashboard host of the new settings.
    expect(fleet.slot('d01')?.host.instance).toBe(d01)
    expect(fleet.snapshot().devices.map((row) => row.host.state)).toEqual(Array(6).fill('connected'))
    expect(world.started()).toBe(5 + 2 + 1)
    expect(fleet.snapshot().generation).toBe(before.generation + 1)

    fleet.configure({ windowMs: 5_000, deviceCount: 3 })
    await fleet.ready()
    const after = fleet.snapshot()
    expect(after.epoch).not.toBe(before.epoch)
    expect(fleet.slot('d01')?.host.instance).not.toBe(d01)
    // Six device hosts and one dashboard host retired; three device hosts and a dashboard host of the new epoch.
    expect(world.started()).toBe(8 + 3 + 1)
    for (const id of ['d04', 'd05', 'd06']) expect(world.host(`test:f1:${before.epoch}:${id}`)).toBeUndefined()
    await advance(12_000)
    const dashboard = fleet.snapshot().dashboard
    expect(fleet.snapshot().devices).toHaveLength(3)
    expect(dashboard?.results({ window: 'tumbling:5000' }).length).toBeGreaterThan(0)
    expect(dashboard?.stats().sources).toBe(3)
  })

  it('a ?device= tab shares its device host with the dashboard: one producer, commands from either page, a crash restarts it for both', async () => {
    const { fleet, clock, advance, pages, world, device, engineOf, dashboard, extra, settings } = await fakeFleet({ deviceCount: 3 })
    await advance(3_000)
    const tab = new DeviceTab({ index: 1, settings, wiring: pages.wiring, hosts: world.hosts, now: () => clock.now, control: pages.openControl() })
    tabs.push(tab)
    extra.push((now) => tab.tick(now))
    tab.start()
    await tab.opened()
    const slot = fleet.slot('d02')
    if (slot === undefined) throw new Error('no d02')
    // The same host: no new one was started for the tab, and both pages see its instance.
    expect(world.started()).toBe(4)
    expect(tab.slot.host.instance).toBe(slot.host.instance)
    const seqBefore = (await device('d02')).seq
    await advance(4_000)
    // One producer, in the host: three readings per 500 ms sample, whoever has the device open.
    expect((await device('d02')).seq - seqBefore).toBeLessThanOrEqual(27)
    expect(fleet.snapshot().devices.find((row) => row.id === 'd02')).toMatchObject({ tab: true, host: { instance: slot.host.instance } })

    // A command from the tab changes the device the dashboard shows; the dashboard's catch-up report follows.
    await tab.command('offline')
    expect(await device('d02')).toMatchObject({ online: false })
    await advance(7_000)
    fleet.setOnline('d02', true)
    await advance(3_000)
    expect(tab.snapshot().status).toMatchObject({ online: true })
    expect(fleet.snapshot().activity.some((entry) => /^d02 back after \d+ s offline: \d+ readings .* [1-9]\d* window corrections/.test(entry.text))).toBe(true)

    // A crash from the tab ends the one host; both pages move to the next one.
    const crashed = slot.host.instance
    await tab.command('crash')
    await until(() => slot.host.state === 'connected' && tab.slot.host.state === 'connected' && slot.host.instance !== crashed, 'both pages on the next host')
    expect(tab.slot.host.instance).toBe(slot.host.instance)
    expect(world.started()).toBe(5)
    await advance(3_000)
    const window = windowIdOf(settings)
    expect(countsOf([dashboard()], window)).toEqual(countsOf(['d01', 'd02', 'd03'].map(engineOf), window))

    // The tab closes: the host runs on for the dashboard.
    await tab.close()
    const seq = (await device('d02')).seq
    await advance(2_000)
    expect((await device('d02')).seq).toBeGreaterThan(seq)
    expect(slot.host.instance).toBe(tab.slot.host.instance)
  })

  it('a host started by a ?device= tab alone is booted by the tab, and the dashboard that opens it later leaves its switches as they are', async () => {
    const clock = { now: T0 }
    const pages = memoryPages()
    const world = inProcessHosts({ now: () => clock.now, indexedDB: pages.indexedDB, transports: pages.transports })
    worlds.push(world)
    const settings = { ...DEFAULT_SETTINGS, deviceCount: 2 }
    const tab = new DeviceTab({ index: 1, settings, wiring: pages.wiring, hosts: world.hosts, now: () => clock.now, control: pages.openControl() })
    tabs.push(tab)
    tab.start()
    await tab.opened()
    await tab.command('offline')
    expect(tab.snapshot().status).toMatchObject({ phase: 'running', online: false })
    const fleet = new Fleet({ wiring: pages.wiring, hosts: world.hosts, settings, now: () => clock.now, intro: false, control: pages.openControl() })
    fleets.push(fleet)
    await fleet.ready()
    // The dashboard's boot (online) came second: the host keeps the tab's switch.
    expect(fleet.slot('d02')?.status()).toMatchObject({ online: false })
    expect(fleet.slot('d02')?.host.instance).toBe(tab.slot.host.instance)
  })
})
