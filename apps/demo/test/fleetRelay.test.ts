/**
 * The fleet through a real relay (`startRelay` in this process, development tokens, its own
 * PGlite directory), its hosts run in this process with the workers' host options
 * (`inProcessHosts`): every device's host writes its own room with a device token, the dashboard's
 * host follows the epoch's directory with a read-only token, and a `?device=` tab shares a
 * device's host. Processing time is a fake clock; the relay's traffic is real, so each step waits
 * (bounded) until the documents have travelled.
 */
import 'fake-indexeddb/auto'
import { mkdtempSync, rmSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DevTokenIssuer, type Relay, startRelay } from '@tidemark/relay'
import { cuttableWebSocket } from '@tidemark/testkit/network'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { LinksReport } from '../src/fleet/dashboardHost.ts'
import { DeviceTab } from '../src/fleet/deviceTab.ts'
import type { FleetSettings } from '../src/fleet/fleetSettings.ts'
import { dashboardHostName, type FleetWiring, type LinkTransports, type RelayConfig } from '../src/fleet/fleetWiring.ts'
import { DEVICES_MEASURE } from '../src/ui/chartMeasure.ts'
import { heldRooms } from './heldRooms.ts'
import { closeRelayFleets, countsOf, eventually, relayFleet } from './relayFleet.ts'

const SECRET = new TextEncoder().encode('tidemark demo tests: a relay secret of 32+ bytes')
let relay: Relay
let dataDir: string
const tabs: DeviceTab[] = []

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tidemark-demo-relay-'))
  relay = await startRelay({ port: 0, store: { dataDir }, auth: { secret: SECRET }, devTokens: true, log: () => undefined })
}, 120_000)

afterEach(async () => {
  await Promise.all(tabs.splice(0).map((tab) => tab.close()))
  await closeRelayFleets()
})

afterAll(async () => {
  await relay?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

const relayConfig = (): RelayConfig => ({ url: relay.url, tokenUrl: `${relay.httpUrl}/dev/token` })

/**
 * After d03 retired at `retiredAt` (3 devices, 2 left): waits until the new dashboard host follows
 * every device's room, d03's too, lets more than the idle timeout (3 s) pass, after which a silent
 * d03 would stop holding the watermark (fallback), and returns the dashboard's fired results since.
 */
async function firedAfterRetire(
  fleet: Pick<Awaited<ReturnType<typeof fleetOnRelay>>, 'engines' | 'dashboard' | 'advance' | 'window'>,
  retiredAt: number,
) {
  const { engines, dashboard, advance, window } = fleet
  const caughtUp = (): boolean => engines().every((engine) => engine.syncStatus().pendingLocalUpdates === 0) && dashboard().stats().sources === 3
  await eventually(caughtUp, "the new dashboard host has every device's room")
  await advance(9_000)
  await eventually(caughtUp, 'the dashboard caught up with d01 and d02')
  return dashboard()
    .results({ window, key: 'temp' })
    .filter((r) => r.start >= retiredAt && r.status !== 'provisional')
}

/** A fleet through this file's relay: `relayFleet` of `./relayFleet.ts`. */
const fleetOnRelay = (settings: Partial<FleetSettings> = {}, wiring: Partial<FleetWiring> = {}, dashboardTransports?: LinkTransports) =>
  relayFleet(relayConfig(), { settings, wiring, ...(dashboardTransports === undefined ? {} : { dashboardTransports }) })

describe('the fleet through a relay', { timeout: 60_000 }, () => {
  it('each device writes its own room with its own token; the dashboard follows the directory read-only and shows what the devices hold', async () => {
    const { fleet, advance, engines, dashboard, settled, statuses, window } = await fleetOnRelay()
    await advance(6_000)
    await eventually(settled, 'the dashboard shows what the devices hold')
    expect(countsOf([dashboard()], window)).toEqual(countsOf(engines(), window))
    expect(dashboard().stats()).toMatchObject({ sources: 3, ingested: 0 })
    expect(dashboard().syncStatus()).toMatchObject({ state: 'connected', refusal: null })
    expect(statuses().map((s) => [s.id, s.relayState, s.relayRefusal])).toEqual([
      ['d01', 'connected', null],
      ['d02', 'connected', null],
      ['d03', 'connected', null],
    ])
    await advance(600)
    expect(fleet.snapshot().relayRooms).toEqual({ rooms: 3, refused: [], refill: expect.objectContaining({ state: 'merged', missing: [] }), awaiting: [] })
    expect(fleet.snapshot().devices.every((row) => row.lastHeard !== null)).toBe(true)
    // A device's connection never receives the fleet's state: each device engine knows its own source only.
    for (const engine of engines()) expect(engine.stats().sources).toBe(1)
  })

  it('a device offline keeps ingesting; back online it sends what the relay misses and the dashboard corrects fired windows', async () => {
    const { fleet, advance, dashboard, settled, statuses } = await fleetOnRelay()
    await advance(4_000)
    await eventually(settled, 'first convergence')
    fleet.setOnline('d02', false)
    await advance(7_000)
    const away = statuses().find((s) => s.id === 'd02')
    expect(away).toMatchObject({ online: false, relayState: 'offline', relayRefusal: null })
    expect(away?.pending).toBeGreaterThan(0)
    const correctionsBefore = dashboard().stats().corrections

    fleet.setOnline('d02', true)
    await advance(200)
    await eventually(settled, 'convergence after the reconnect')
    expect(statuses().find((s) => s.id === 'd02')).toMatchObject({ online: true, relayState: 'connected', pending: 0 })
    expect(dashboard().stats().corrections).toBeGreaterThan(correctionsBefore)
    await advance(2_000)
    expect(fleet.snapshot().activity.some((entry) => /^d02 back after \d+ s offline: \d+ readings .* [1-9]\d* window corrections/.test(entry.text))).toBe(true)
  })

  it('a ?device= tab shares its device host: one socket for the room, whichever page crashes the host, and the dashboard keeps hearing it', async () => {
    const { fleet, advance, settled, pages, wiring, world, dashboard, clock, extra, statuses } = await fleetOnRelay()
    await advance(3_000)
    await eventually(settled, 'first convergence')
    const tab = new DeviceTab({ index: 1, settings: fleet.snapshot().settings, wiring, hosts: world.hosts, now: () => clock.now, control: pages.openControl() })
    tabs.push(tab)
    extra.push(() => tab.tick(clock.now))
    tab.start()
    await tab.opened()
    const slot = fleet.slot('d02')
    expect(tab.slot.host.instance).toBe(slot?.host.instance)
    // Three device hosts and the dashboard's: the tab started none.
    expect(world.started()).toBe(4)
    await advance(2_000)
    expect(tab.snapshot().status).toMatchObject({ relayState: 'connected', relayRefusal: null })

    // The tab crashes the host: the next one rejoins the room with a fresh token and uploads what its log holds.
    const crashed = tab.slot.host.instance
    await tab.command('crash')
    await eventually(() => slot?.host.state === 'connected' && tab.slot.host.state === 'connected' && tab.slot.host.instance !== crashed, 'both pages on the next host')
    expect(tab.slot.host.instance).toBe(slot?.host.instance)
    await advance(3_000)
    await eventually(settled, 'the dashboard shows what the devices hold after the restart')
    expect(statuses().find((s) => s.id === 'd02')).toMatchObject({ phase: 'running', relayState: 'connected', relayRefusal: null })
    expect(dashboard().syncStatus().refusal).toBeNull()
    expect(dashboard().stats().anomalies.source_conflict).toBe(0)
    expect(fleet.snapshot().devices.find((row) => row.id === 'd02')).toMatchObject({ tab: true, host: { restarts: 1 }, status: { relayState: 'connected' } })
  })

  it('a relay that refuses the tokens: every device and the dashboard show why, and nothing reaches the dashboard', async () => {
    // A token service signing with another secret: the relay refuses every token it hands out.
    const issuer = new DevTokenIssuer(new TextEncoder().encode('not the relay secret, but 32+ bytes long'))
    const server = http.createServer((request, response) => {
      void issuer.issue(new URL(request.url ?? '/', 'http://tokens').searchParams).then((result) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result)))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const tokenUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/dev/token`
      const { advance, dashboard, statuses } = await fleetOnRelay({}, { relay: { url: relay.url, tokenUrl } })
      await advance(1_000)
      await eventually(() => statuses().length === 3 && statuses().every((s) => s.relayRefusal !== null) && dashboard().syncStatus().refusal !== null, 'every refusal shown')
      expect(statuses().map((s) => [s.id, s.relayState, s.relayRefusal])).toEqual([
        ['d01', 'offline', 'tidemark:bad-signature'],
        ['d02', 'offline', 'tidemark:bad-signature'],
        ['d03', 'offline', 'tidemark:bad-signature'],
      ])
      expect(dashboard().syncStatus().refusal).toBe('tidemark:bad-signature')
      await advance(2_000)
      expect(dashboard().stats().sources).toBe(0)
    } finally {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })

  it('devices a smaller fleet retires finish their sources: the dashboard no longer waits for them, and its later windows fire proven', async () => {
    const { fleet, clock, advance, dashboard, settled, engines, world, wiring, window } = await fleetOnRelay()
    await advance(4_000)
    await eventually(settled, 'first convergence')
    const d03 = fleet.slot('d03')?.name ?? ''
    fleet.configure({ deviceCount: 2 })
    // Resolves once d03's host retired (its last upload and its finish durable, the relay's acknowledgement awaited).
    await fleet.ready()
    const retiredAt = clock.now
    await eventually(() => world.host(d03) === undefined, "d03's host ended")
    const later = await firedAfterRetire({ engines, dashboard, advance, window }, retiredAt)
    expect(later.length).toBeGreaterThan(2)
    expect(later.map((r) => r.basis)).toEqual(later.map(() => 'proven'))
    const clocks = world.host(dashboardHostName(wiring, fleet.snapshot().settings))?.engine?.replica.exportState().clocks ?? []
    expect(clocks.find((entry) => entry.source === 'd03')).toMatchObject({ finished: true })
    expect(fleet.snapshot().activity.some((entry) => /^d03 retired: its source finished, and the relay has it/.test(entry.text))).toBe(true)
  })

  it('a device retired while offline finishes its source in its log only: the relay never gets it, and the dashboard falls back without it', async () => {
    const { fleet, clock, advance, dashboard, engines, window } = await fleetOnRelay()
    await advance(4_000)
    fleet.setOnline('d03', false)
    await advance(200)
    fleet.configure({ deviceCount: 2 })
    await fleet.ready()
    const retiredAt = clock.now
    expect(fleet.snapshot().activity.some((entry) => /^d03 retired: its source finished in its write-ahead log, but it was offline/.test(entry.text))).toBe(true)
    // The documented limit: its room holds d03's clock as it was when it went offline, so d03 turns idle.
    const later = await firedAfterRetire({ engines, dashboard, advance, window }, retiredAt)
    expect(later.length).toBeGreaterThan(0)
    expect(later.every((r) => r.basis === 'fallback')).toBe(true)
  })

  it('a device that left the fleet and comes back in the same epoch writes its next source: its readings count, as the same device', async () => {
    const { fleet, clock, advance, dashboard, settled, statuses, world, window } = await fleetOnRelay()
    await advance(3_000)
    await eventually(settled, 'first convergence')
    fleet.configure({ deviceCount: 2 })
    await fleet.ready()
    await advance(1_000)
    fleet.configure({ deviceCount: 3 })
    await fleet.ready()
    const backAt = clock.now
    await advance(6_000)
    // Its engine holds its finished source d03 and the new d03~2; the dashboard shows exactly what the three engines hold.
    await eventually(settled, 'the dashboard shows what the devices hold')
    // None of its readings refused: a finished source would refuse every one (finished_source).
    expect(world.host(fleet.slot('d03')?.name ?? '')?.engine?.stats().anomalies.finished_source).toBe(0)
    const d03 = statuses().find((status) => status.id === 'd03')
    expect(d03).toMatchObject({ source: 'd03~2', relayState: 'connected', relayRefusal: null })
    expect(d03?.seq).toBeGreaterThan(0)
    expect(dashboard().stats()).toMatchObject({ sources: 4, anomalies: expect.objectContaining({ source_conflict: 0 }) })
    const results = dashboard().results({ window, key: 'temp' })
    const later = results.filter((r) => r.start >= backAt && r.status !== 'provisional')
    expect(later.length).toBeGreaterThan(0)
    expect(later.every((r) => r.basis === 'proven')).toBe(true)
    // d03 and d03~2 are one device: no window counts more than three.
    expect(Math.max(...results.map((r) => DEVICES_MEASURE.valueOf(r) ?? 0))).toBe(3)
  })

  it("the dashboard's own link down for longer than the allowed lateness: back, it merges what it missed with no finality violation", async () => {
    // Only the dashboard's socket is cut (its machine offline); the devices go on writing their rooms on the relay.
    const link = cuttableWebSocket()
    const { advance, dashboard, settled } = await fleetOnRelay({}, {}, { WebSocket: link.WebSocket })
    await advance(6_000)
    await eventually(settled, 'the dashboard shows what the devices hold')
    const before = dashboard().stats()
    link.cut()
    await eventually(() => dashboard().syncStatus().state !== 'connected', 'the dashboard notices that its link is down')
    // Longer than the idle timeout (3 s) and the allowed lateness (10 s) together.
    await advance(16_000)
    link.restore()
    // Its link comes back on its own (a jittered reconnect) while the fleet runs on.
    const deadline = Date.now() + 30_000
    while (!settled()) {
      if (Date.now() > deadline) throw new Error('the dashboard never caught up after its link came back')
      await advance(100)
    }
    // No device was silent, only the dashboard deaf: what it missed changed no window it had already made final.
    expect(dashboard().stats().finalityViolations - before.finalityViolations).toBe(0)
    // And its clock runs again: idleness and the watermark move on.
    const watermark = dashboard().watermark()
    await advance(4_000)
    expect(dashboard().watermark()).toBeGreaterThan(watermark)
  })

  it('a new dashboard host takes every room together: while the devices write on, none of its windows turns final before every room landed', async () => {
    const { fleet, advance, dashboard, settled } = await fleetOnRelay({ deviceCount: 6 })
    // Longer than the allowed lateness (10 s): every room holds windows a watermark would make final.
    await advance(16_000)
    await eventually(settled, 'first convergence')
    fleet.configure({ outOfOrdernessMs: 500 })
    await fleet.ready()
    await eventually(() => fleet.snapshot().dashboard !== null && dashboard().stats().sources === 6, "the new dashboard host has every device's room")
    await advance(4_000)
    await eventually(settled, 'the new dashboard shows what the devices hold')
    expect(dashboard().stats()).toMatchObject({ sources: 6, finalityViolations: 0 })
    expect(fleet.snapshot().relayRooms?.refill).toMatchObject({ state: 'merged', rooms: 6, synced: 6, missing: [] })
    expect(fleet.snapshot().activity.some((entry) => /^The dashboard engine took its 6 rooms together once each had synced/.test(entry.text))).toBe(true)
  })

  it("a finished device's room landing first fires nothing: the new dashboard host waits for the live rooms and takes all of them together", async () => {
    const held = heldRooms()
    const { fleet, clock, advance, settled, world, wiring, window } = await fleetOnRelay({}, {}, { WebSocket: held.WebSocket })
    await advance(4_000)
    await eventually(settled, 'first convergence')
    fleet.configure({ deviceCount: 2 })
    await fleet.ready()
    const retiredAt = clock.now
    await advance(4_000)
    // From here the relay answers d01's and d02's rooms late (to every dashboard socket): d03's, finished, lands first.
    held.hold((room) => /\/d0[12]$/.test(room))
    fleet.configure({ outOfOrdernessMs: 500 })
    await fleet.ready()
    const name = dashboardHostName(wiring, fleet.snapshot().settings)
    const links = (): LinksReport | undefined => world.call(name, 'links') as LinksReport | undefined
    const engine = world.host(name)?.engine
    // d03's room synced: held by the dashboard (or, merged alone, its source known).
    await eventually(() => links()?.followed?.refill?.synced === 1 || engine?.stats().sources === 1, "the new dashboard host synced d03's room")
    // Merged alone, d03's finished clock would make the proof frontier Infinity and fire every window of its room.
    expect(engine?.results().filter((r) => r.status !== 'provisional').length).toBe(0)
    expect(engine?.stats().sources).toBe(0)
    expect(links()?.followed?.refill).toMatchObject({ state: 'waiting', rooms: 3, synced: 1 })
    held.release()
    await eventually(() => links()?.followed?.refill.state === 'merged' && engine?.stats().sources === 3, 'the refill took every room')
    // The windows d03 had readings for fired once, with every device's readings in: on time, never corrected.
    const early = (engine?.results({ window, key: 'temp' }) ?? []).filter((r) => r.end <= retiredAt)
    expect(early.length).toBeGreaterThan(0)
    expect(early.map((r) => [r.status, r.revision])).toEqual(early.map(() => ['on_time', 0]))
    expect(engine?.stats()).toMatchObject({ finalityViolations: 0, corrections: 0 })
  })

  it('a room that never syncs stalls the new dashboard host 10 s at most: it takes the rooms that synced, and says which one it went on without', async () => {
    const held = heldRooms()
    const { fleet, advance, settled, world, wiring, dashboard } = await fleetOnRelay({}, {}, { WebSocket: held.WebSocket })
    await advance(4_000)
    await eventually(settled, 'first convergence')
    held.hold((room) => room.endsWith('/d02'))
    fleet.configure({ outOfOrdernessMs: 500 })
    await fleet.ready()
    const name = dashboardHostName(wiring, fleet.snapshot().settings)
    const links = (): LinksReport | undefined => world.call(name, 'links') as LinksReport | undefined
    await eventually(() => links()?.followed?.refill.synced === 2, 'the new dashboard host synced d01 and d03')
    await advance(9_500)
    expect(links()?.followed?.refill.state).toBe('waiting')
    await advance(600)
    expect(links()?.followed?.refill).toMatchObject({ state: 'timedOut', rooms: 3, synced: 2, missing: [expect.stringMatching(/\/d02$/)] })
    expect(world.host(name)?.engine?.stats().sources).toBe(2)
    await advance(600)
    expect(fleet.snapshot().activity.some((entry) => entry.tone === 'bad' && /^The dashboard engine stopped waiting for 1 of 3 rooms after 10\.\d s \(d02\)/.test(entry.text))).toBe(true)
    // d02's room lands late: merged as it comes, and the dashboard converges.
    held.release()
    await advance(1_000)
    await eventually(settled, 'the dashboard shows what the devices hold')
    expect(dashboard().stats().sources).toBe(3)
  })
})
