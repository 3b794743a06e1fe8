import { describe, expect, it } from 'vitest'
import { deviceRoomName, directoryRoomName, type FleetWiring, loadWiring, relayFleetName } from '../src/fleet/fleetWiring.ts'

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
