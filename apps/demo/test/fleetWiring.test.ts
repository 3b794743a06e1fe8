import { describe, expect, it } from 'vitest'
import { loadWiring } from '../src/fleet/fleetWiring.ts'

const answers = async (): Promise<string | null> => null

function json(body: unknown, status = 200): Promise<Response> {
  return Promise.resolve(new Response(typeof body === 'string' ? body : JSON.stringify(body), { status }))
}

describe('loadWiring says why the fleet runs without its sync server', () => {
  it('uses the server /config.json names when it answers', async () => {
    const wiring = await loadWiring('f1', () => json({ syncUrl: 'ws://127.0.0.1:4000', room: 'r' }), answers)
    expect(wiring).toMatchObject({ fleet: 'f1', server: { url: 'ws://127.0.0.1:4000', room: 'r' }, serverNotice: null })
  })

  it.each([
    ['no config file', () => json('not found', 404), /^No \/config\.json \(HTTP 404;/],
    ['a failed fetch', () => Promise.reject(new TypeError('Failed to fetch')), /^\/config\.json could not be fetched \(Failed to fetch\)/],
    ['a config that is not JSON', () => json('{ syncUrl: '), /^\/config\.json is not JSON \(/],
    ['a config without a ws:// URL', () => json({ syncUrl: 'http://127.0.0.1:4000' }), /^\/config\.json names no sync server/],
  ])('reports %s', async (_case, fetchConfig, notice) => {
    const wiring = await loadWiring('f1', fetchConfig, answers)
    expect(wiring.server).toBeNull()
    expect(wiring.serverNotice).toMatch(notice)
    expect(wiring.serverNotice).toMatch(/BroadcastChannel only/)
  })

  it('reports a server that does not answer, with the probe\'s reason', async () => {
    const wiring = await loadWiring('f1', () => json({ syncUrl: 'ws://127.0.0.1:4000' }), async () => 'refused the connection')
    expect(wiring.server).toBeNull()
    expect(wiring.serverNotice).toBe('Sync server ws://127.0.0.1:4000 refused the connection: devices sync through BroadcastChannel only, within this browser.')
  })
})
