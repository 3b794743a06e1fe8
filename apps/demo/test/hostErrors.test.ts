/**
 * What a page shows when a host answers what it cannot use, or refuses a call: the reason, in
 * the activity feed and on the device's row (or the device tab). A host that went away mid-call
 * is no error: the connection says so, and the next host is asked.
 */
import 'fake-indexeddb/auto'
import { afterEach, describe, expect, it } from 'vitest'
import type { RemoteEngine } from '@tidemark/worker'
import { DeviceTab } from '../src/fleet/deviceTab.ts'
import type { DeviceStatus } from '../src/fleet/deviceStatus.ts'
import { Fleet } from '../src/fleet/fleet.ts'
import type { FleetAggregates } from '../src/fleet/fleetAggregates.ts'
import type { FleetHosts, HostRequest } from '../src/fleet/fleetHosts.ts'
import { DEFAULT_SETTINGS } from '../src/fleet/fleetSettings.ts'
import { inProcessHosts } from './inProcessHosts.ts'
import { memoryPages, until } from './memoryPages.ts'

const T0 = 1_800_000_000_000
/** What the worker package rejects a call with when its host goes away before answering (`HostCalls.hostLost`). */
const WENT_AWAY = "the engine's host went away before answering command (the host stopped); it may or may not have run it"

/** One page's call of a host command: the host request it went to, the engine, the command, its payload, and the call itself. */
interface Call {
  readonly request: HostRequest
  readonly engine: RemoteEngine<FleetAggregates>
  readonly name: string
  readonly payload: unknown
  /** Runs the call as it was made. */
  readonly run: (payload?: unknown) => Promise<unknown>
}

/** Undefined: the call runs as made. */
type Tamper = (call: Call) => Promise<unknown> | undefined

const fleets: Fleet[] = []
const tabs: DeviceTab[] = []
const worlds: ReturnType<typeof inProcessHosts>[] = []

afterEach(async () => {
  await Promise.all(tabs.splice(0).map((tab) => tab.close()))
  await Promise.all(fleets.splice(0).map((fleet) => fleet.close()))
  await Promise.all(worlds.splice(0).map((world) => world.shutdown()))
})

/** In-process hosts whose pages' commands go through `tamper` first (what a faulty host, or one that goes away, would answer). */
function faultyWorld() {
  const clock = { now: T0 }
  const pages = memoryPages()
  const world = inProcessHosts({ now: () => clock.now, indexedDB: pages.indexedDB, transports: pages.transports })
  worlds.push(world)
  const state: { tamper: Tamper } = { tamper: () => undefined }
  const hosts: FleetHosts = {
    async connect(request) {
      const engine = await world.hosts.connect(request)
      const command = engine.command.bind(engine)
      engine.command = (name, payload) => {
        const call: Call = { request, engine, name, payload, run: (changed = payload) => command(name, changed) }
        return state.tamper(call) ?? call.run()
      }
      return engine
    },
  }
  return { clock, pages, world, hosts, state }
}

/** A fleet of `deviceCount` devices over `faultyWorld()`; `advance(ms)` ticks every 100 ms (hosts' timers, then the page). */
async function faultyFleet(deviceCount: number, tamper: Tamper = () => undefined) {
  const faulty = faultyWorld()
  const { clock, pages, world, hosts, state } = faulty
  state.tamper = tamper
  const settings = { ...DEFAULT_SETTINGS, deviceCount }
  const fleet = new Fleet({ wiring: pages.wiring, hosts, settings, now: () => clock.now, intro: false, control: pages.openControl() })
  fleets.push(fleet)
  await fleet.ready()
  pages.flush()
  const advance = async (ms: number): Promise<void> => {
    for (const end = clock.now + ms; clock.now < end; ) {
      clock.now += 100
      world.tick(clock.now)
      fleet.tick(clock.now)
      await pages.settle(() => false)
    }
  }
  const bad = (): string[] =>
    fleet
      .snapshot()
      .activity.filter((entry) => entry.tone === 'bad')
      .map((entry) => entry.text)
  const row = (id: string) => fleet.snapshot().devices.find((device) => device.id === id)
  return { ...faulty, fleet, settings, advance, bad, row }
}

/** The slot index of the device whose host the call went to; -1 for the dashboard's. */
function deviceOf(call: Call): number {
  return call.request.kind === 'device' ? call.request.config.index : -1
}

/**
 * Ends the call's host before it answers (`end`: a crash, a retire), then rejects as the worker
 * package does for a call whose host went away: once the connection has left that host.
 */
async function hostGoesAway(call: Call, end: string): Promise<never> {
  await call.engine.command(end).catch(() => {})
  await until(() => call.engine.connection().state !== 'connected', 'the connection left the host')
  throw new Error(WENT_AWAY)
}

describe('errors a host answers are shown; a host that went away is not one', { timeout: 30_000 }, () => {
  it("a status of another device or of an unknown phase shows its reason on the row and once in the activity feed; the next good answer clears it", async () => {
    let answer: ((status: DeviceStatus) => unknown) | null = null
    const { fleet, advance, bad, row } = await faultyFleet(2, (call) => {
      if (answer === null || call.name !== 'status' || deviceOf(call) !== 0) return undefined
      const change = answer
      return call.run().then((status) => change(status as DeviceStatus))
    })
    await advance(1_000)
    const slot = fleet.slot('d01')
    if (slot === undefined) throw new Error('no d01')
    const good = slot.status()
    expect(good).toMatchObject({ id: 'd01', phase: 'running' })
    expect(bad()).toEqual([])

    answer = (status) => ({ ...status, id: 'd07' })
    await advance(2_000)
    expect(slot.error).toBe("d01's host answered the status of d07")
    expect(row('d01')?.error).toBe("d01's host answered the status of d07")
    // Polled four times, shown once; the row keeps the last status the host answered well.
    expect(bad()).toEqual(["d01's host answered the status of d07"])
    expect(slot.status()?.id).toBe('d01')
    expect(await slot.refresh()).toBe(slot.status())

    answer = (status) => ({ ...status, phase: 'dreaming' })
    await advance(600)
    expect(slot.error).toBe("d01's host answered an unknown phase dreaming")
    expect(bad()[0]).toBe("d01's host answered an unknown phase dreaming")

    answer = null
    await advance(600)
    expect(slot.error).toBeNull()
    expect(row('d01')?.error).toBeNull()
    expect(slot.status()).toMatchObject({ id: 'd01', phase: 'running' })
    expect(fleet.slot('d02')?.error).toBeNull()
  })

  it('a status call the host refuses while it is still there shows why', async () => {
    let refuse = false
    const { fleet, advance, bad } = await faultyFleet(1, (call) =>
      refuse && call.name === 'status' ? Promise.reject(new RangeError('d01: the device is not set up (its host failed to start)')) : undefined,
    )
    refuse = true
    await advance(1_000)
    expect(fleet.slot('d01')?.error).toBe("d01's host did not answer its status: d01: the device is not set up (its host failed to start)")
    expect(bad()).toEqual(["d01's host did not answer its status: d01: the device is not set up (its host failed to start)"])
  })

  it('a boot its host refuses shows the reason on the row, in the activity feed and on the device tab, instead of opening for ever', async () => {
    // The page boots with switches the device host refuses (its own check of the payload).
    const refusing = (call: Call) => (call.name === 'boot' ? call.run({ online: 'yes', paused: false }) : undefined)
    const { fleet, advance, bad, row, clock, pages, hosts, state } = await faultyFleet(2, (call) => (deviceOf(call) === 1 ? refusing(call) : undefined))
    const reason = `d02's host refused its boot: boot needs { online: boolean, paused: boolean }, got {"online":"yes","paused":false}`
    expect(fleet.slot('d02')?.error).toBe(reason)
    await advance(2_000)
    // Its host answers its status polls (still booting, as no page booted it): the refused boot stays shown.
    expect(row('d02')).toMatchObject({ error: reason, status: { phase: 'booting' }, host: { state: 'connected' } })
    expect(bad()).toEqual([reason])
    expect(row('d01')).toMatchObject({ error: null, status: { phase: 'running' } })

    // A device tab of the same device refused the same way shows it on its page.
    const tab = new DeviceTab({ index: 1, settings: fleet.snapshot().settings, wiring: pages.wiring, hosts, now: () => clock.now, control: pages.openControl() })
    tabs.push(tab)
    state.tamper = (call) => (deviceOf(call) === 1 ? refusing(call) : undefined)
    tab.start()
    await tab.opened()
    tab.tick(clock.now)
    expect(tab.snapshot().error).toBe(reason)
  })

  it("a host that goes away mid-call (a device's status, its boot, the dashboard's links) is handled quietly: the next host answers", async () => {
    let away: 'status' | 'boot' | 'links' | null = null
    const { fleet, advance, bad, row, world } = await faultyFleet(2, (call) => {
      if (away !== call.name || deviceOf(call) !== (call.name === 'links' ? -1 : 0)) return undefined
      away = null
      // A device's host crashes; the dashboard's retires (it ends either way, and the page reaches the next one).
      return hostGoesAway(call, call.name === 'links' ? 'retire' : 'crash')
    })
    await advance(1_000)
    const slot = fleet.slot('d01')
    if (slot === undefined) throw new Error('no d01')
    const first = slot.host.instance

    away = 'status'
    await advance(600)
    expect(away).toBeNull()
    await until(() => slot.host.state === 'connected' && slot.host.instance !== first && slot.statusHost === slot.host.instance, 'd01 booted on its next host')
    await advance(600)
    expect(slot.error).toBeNull()
    expect(row('d01')).toMatchObject({ error: null, status: { phase: 'running' }, host: { restarts: 1 } })

    // The next host goes away before answering its boot: the one after it is booted.
    const second = slot.host.instance
    away = 'boot'
    await slot.command('crash')
    await until(() => away === null && slot.host.state === 'connected' && slot.host.instance !== second && slot.statusHost === slot.host.instance, 'd01 booted on a host after the one that went away at boot')
    expect(slot.error).toBeNull()

    const dashboardHosts = world.started()
    away = 'links'
    await advance(600)
    expect(away).toBeNull()
    await until(() => fleet.snapshot().dashboardHost?.state === 'connected' && world.started() > dashboardHosts, "the dashboard's next host")
    await advance(1_000)
    expect(fleet.snapshot().dashboardHost).toMatchObject({ state: 'connected', takeovers: 1 })
    expect(bad()).toEqual([])
  })

  it("a links report that is not one is shown once in the activity feed", async () => {
    let broken = false
    const { advance, bad } = await faultyFleet(1, (call) => (broken && call.name === 'links' ? Promise.resolve({ lastHeard: {} }) : undefined))
    await advance(600)
    broken = true
    await advance(2_000)
    expect(bad()).toEqual(["The dashboard engine's host answered a links report that is not one: an object with lastHeard"])
  })
})
