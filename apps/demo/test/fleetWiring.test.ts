import { describe, expect, it } from 'vitest'
import { parseDashboardHostConfig } from '../src/fleet/dashboardHost.ts'
import { parseDeviceHostConfig } from '../src/fleet/deviceHost.ts'
import { DEFAULT_SETTINGS } from '../src/fleet/fleetSettings.ts'
import { dashboardHostName, deviceHostName, deviceRoomName, directoryRoomName, type FleetWiring, loadWiring, parseWiring, relayFleetName } from '../src/fleet/fleetWiring.ts'

const answers = async (): Promise<string | null> => null

function json(body: unknown, status = 200): Promise<Response> {
  return Promise.resolve(new Response(typeof body === 'string' ? body : JSON.stringify(body), { status }))
}

const CONFIG = { relayUrl: 'ws://127.0.0.1:4000', tokenUrl: 'http://127.0.0.1:4000/dev/token' }

describe('loadWiring says why the fleet runs without its relay', () => {
  it('uses the relay /config.json names when it answers', async () => {
    const wiring = await loadWiring('f1', () => json(CONFIG), answers)
    expect(wiring).toMatchObject({ fleet: 'f1', relay: { url: 'ws://127.0.0.1:4000', tokenUrl: 'http://127.0.0.1:4000/dev/token' }, relayNotice: null })
  })

  it.each([
    ['no config file', () => json('not found', 404), /^No \/config\.json \(HTTP 404;/],
    ['a failed fetch', () => Promise.reject(new TypeError('Failed to fetch')), /^\/config\.json could not be fetched \(Failed to fetch\)/],
    ['a config that is not JSON', () => json('{ relayUrl: '), /^\/config\.json is not JSON \(/],
    ['a config without a ws:// URL', () => json({ ...CONFIG, relayUrl: 'http://127.0.0.1:4000' }), /^\/config\.json names no relay/],
    ['a config without a token URL', () => json({ relayUrl: CONFIG.relayUrl }), /^\/config\.json names no relay/],
  ])('reports %s', async (_case, fetchConfig, notice) => {
    const wiring = await loadWiring('f1', fetchConfig, answers)
    expect(wiring.relay).toBeNull()
    expect(wiring.relayNotice).toMatch(notice)
    expect(wiring.relayNotice).toMatch(/BroadcastChannel only/)
  })

  it("reports a relay that does not answer, with the probe's reason", async () => {
    const wiring = await loadWiring('f1', () => json(CONFIG), async () => 'refused the connection')
    expect(wiring.relay).toBeNull()
    expect(wiring.relayNotice).toBe('Relay ws://127.0.0.1:4000 refused the connection: devices sync through BroadcastChannel only, within this browser.')
  })
})

describe('room names on the relay', () => {
  const wiring: FleetWiring = { relay: null, relayNotice: null, namespace: 'tidemark-demo', fleet: 'fk2j9x0ab' }

  it('put the epoch into the fleet, so engines that cannot merge never share a directory', () => {
    expect(relayFleetName(wiring, 'w2000-l10000')).toBe('tidemark-demo/fk2j9x0ab/w2000-l10000')
    expect(deviceRoomName(wiring, 'w2000-l10000', 'd07')).toBe('tidemark-demo/fk2j9x0ab/w2000-l10000/d07')
    expect(directoryRoomName(wiring, 'w5000-l0')).toBe('tidemark-demo/fk2j9x0ab/w5000-l0/_directory')
  })

  it('are names the relay accepts: segments of [A-Za-z0-9._-], none starting with _ but the directory, at most 200 characters', () => {
    const longest = deviceRoomName({ ...wiring, fleet: 'f'.repeat(40) }, 'w600000-l3600000', 'd64')
    for (const room of [longest, deviceRoomName(wiring, 'w100-l0', 'd01')]) {
      expect(room.length).toBeLessThanOrEqual(200)
      expect(room).toMatch(/^[A-Za-z0-9.-][A-Za-z0-9._-]*(\/[A-Za-z0-9.-][A-Za-z0-9._-]*)+$/)
    }
  })
})

describe('host names and the config a host gets', () => {
  const wiring: FleetWiring = { relay: { url: 'ws://127.0.0.1:4000', tokenUrl: 'http://127.0.0.1:4000/dev/token' }, relayNotice: null, namespace: 'tidemark-demo', fleet: 'fk2j9x0ab' }

  it('name a device host after the fleet, the epoch and the device, so every page that opens the device reaches the same worker', () => {
    expect(deviceHostName(wiring, 'w2000-l10000', 'd07')).toBe('tidemark-demo:fk2j9x0ab:w2000-l10000:d07')
    expect(deviceHostName(wiring, 'w5000-l10000', 'd07')).not.toBe(deviceHostName(wiring, 'w2000-l10000', 'd07'))
  })

  it('name the dashboard host after every setting that shapes the dashboard engine', () => {
    expect(dashboardHostName(wiring, DEFAULT_SETTINGS)).toBe('tidemark-demo:fk2j9x0ab:w2000-l10000-a1:dashboard-o1000-i3000-n12')
    expect(dashboardHostName(wiring, { ...DEFAULT_SETTINGS, outOfOrdernessMs: 3_000 })).not.toBe(dashboardHostName(wiring, DEFAULT_SETTINGS))
    expect(dashboardHostName(wiring, { ...DEFAULT_SETTINGS, deviceCount: 48 })).not.toBe(dashboardHostName(wiring, DEFAULT_SETTINGS))
  })

  it('are names hostEngine takes: at most 200 characters', () => {
    const longest = { ...wiring, fleet: 'f'.repeat(40) }
    const settings = { ...DEFAULT_SETTINGS, windowMs: 600_000, allowedLatenessMs: 3_600_000, outOfOrdernessMs: 600_000, idleTimeoutMs: 3_600_000, deviceCount: 64 }
    expect(dashboardHostName(longest, settings).length).toBeLessThanOrEqual(200)
    expect(deviceHostName(longest, 'w600000-l3600000', 'd64').length).toBeLessThanOrEqual(200)
  })

  it('hands the wiring to a host as plain data and reads it back', () => {
    expect(parseWiring(structuredClone(wiring))).toEqual(wiring)
    expect(parseWiring({ ...wiring, relay: null, relayNotice: 'no relay' })).toEqual({ ...wiring, relay: null, relayNotice: null })
  })

  it.each([
    ['not an object', 'x', /must be an object/],
    ['no namespace', { ...wiring, namespace: '' }, /needs a namespace/],
    ['a bad fleet id', { ...wiring, fleet: 'a b' }, /needs a fleet id/],
    ['a relay without a ws:// URL', { ...wiring, relay: { url: 'http://x', tokenUrl: 'http://x/dev/token' } }, /names no usable relay/],
  ])('refuses a wiring with %s', (_case, value, message) => {
    expect(() => parseWiring(value)).toThrow(message)
  })

  it.each([
    ['no config', undefined, /needs a config \{ index, settings, wiring \}/],
    ['an index past the fleet', { index: 64, settings: DEFAULT_SETTINGS, wiring }, /index must be an integer in \[0, 64\)/],
    ['settings out of range', { index: 0, settings: { ...DEFAULT_SETTINGS, windowMs: 0 }, wiring }, /settings out of range/],
  ])('a device host refuses a config with %s, saying why', (_case, config, message) => {
    expect(() => parseDeviceHostConfig(config)).toThrow(message)
  })

  it('the dashboard host refuses devices that are not ids', () => {
    expect(() => parseDashboardHostConfig({ settings: DEFAULT_SETTINGS, wiring, devices: [1] })).toThrow(/devices as an array of ids/)
    expect(parseDashboardHostConfig({ settings: DEFAULT_SETTINGS, wiring, devices: ['d01'] })).toMatchObject({ devices: ['d01'] })
  })
})
