/**
 * Relay processes stopped with SIGTERM and with SIGKILL, then started again on the same data
 * directory and port: rooms come back from the store. A device that stays offline after the
 * restart still has on a dashboard everything it had uploaded (SIGTERM) or everything older than
 * the write window (SIGKILL); its reconnect re-sends the rest.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { killRelays, spawnRelay } from './support/relayProcess.ts'
import { clockEntry, dashboardToken, deviceToken, groupEntry, metric, openRoom, relaySocket, replicaLog, SECRET_TEXT, waitFor, waitUntil } from './support/roomClients.ts'

const sockets: ReturnType<typeof relaySocket>[] = []

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy()
  await killRelays()
})

afterAll(() => removeDataDirs())

function socketTo(url: string): ReturnType<typeof relaySocket> {
  const socket = relaySocket(url)
  sockets.push(socket)
  return socket
}

/** Uploads `count` entries from the device, one transaction each, and waits for the relay's acknowledgements. */
async function upload(client: ReturnType<typeof openRoom>, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i++) {
    client.doc.transact(() => {
      replicaLog(client.doc, 'd1').push([groupEntry('d1-temp', i * 60_000, i % 256), clockEntry('d1-temp', 'd1', i)])
    })
  }
  await waitFor(() => !client.provider.hasUnsyncedChanges, 'the relay acknowledged the uploads')
}

function starts(doc: Y.Doc): number[] {
  return replicaLog(doc, 'd1')
    .toArray()
    .filter((entry) => entry[0] === 'g')
    .map((entry) => entry[2] as number)
    .sort((a, b) => a - b)
}

describe('restart on the same data directory', () => {
  it('SIGTERM: the relay stores every loaded room and exits 0; an offline device has everything on a dashboard', async () => {
    const env = { TIDEMARK_DATA_DIR: freshDataDir(), TIDEMARK_AUTH_SECRET: SECRET_TEXT, TIDEMARK_STORE_DEBOUNCE_MS: '60000' }
    const first = await spawnRelay(env)
    const device = openRoom(socketTo(first.url), 'fleet-t/d1', await deviceToken('fleet-t', 'd1'))
    await waitFor(() => device.synced(), 'synced')
    device.doc.getMap('tidemark:meta').set('d1', [2, 'cfg'])
    await upload(device, 0, 40)
    // A minute-long write window: nothing is stored before the shutdown does it.
    expect(await metric(first.httpUrl, 'tidemark_relay_updates_stored_total')).toBe(0)
    const uploaded = starts(device.doc)
    device.destroy()
    expect(await first.stop('SIGTERM')).toEqual({ code: 0, signal: null })

    const second = await spawnRelay({ ...env, PORT: String(first.port) })
    const dashboard = openRoom(socketTo(second.url), 'fleet-t/d1', await dashboardToken('fleet-t'))
    await waitFor(() => dashboard.synced(), 'the dashboard synced')
    expect(starts(dashboard.doc)).toEqual(uploaded)
    const directory = openRoom(socketTo(second.url), 'fleet-t/_directory', await dashboardToken('fleet-t'))
    await waitFor(() => directory.synced(), 'the directory synced')
    expect([...directory.doc.getMap('rooms').keys()]).toEqual(['fleet-t/d1'])
  })

  it('SIGKILL: what was older than the write window is on a dashboard; the device reconnecting re-sends the rest', async () => {
    // A minute-long write window; rooms are stored when they unload (0.1 s after their last connection).
    const env = { TIDEMARK_DATA_DIR: freshDataDir(), TIDEMARK_AUTH_SECRET: SECRET_TEXT, TIDEMARK_STORE_DEBOUNCE_MS: '60000', TIDEMARK_IDLE_ROOM_MS: '100' }
    const first = await spawnRelay(env)
    const deviceDoc = new Y.Doc()
    const device = openRoom(socketTo(first.url), 'fleet-k/d1', await deviceToken('fleet-k', 'd1'), deviceDoc)
    await waitFor(() => device.synced(), 'synced')
    deviceDoc.getMap('tidemark:meta').set('d1', [2, 'cfg'])
    await upload(device, 0, 30)
    device.destroy()
    await waitUntil(async () => (await metric(first.httpUrl, 'tidemark_relay_rooms_loaded')) === 0, 'the room stored and unloaded')
    const stored = await metric(first.httpUrl, 'tidemark_relay_updates_stored_total')
    expect(stored).toBeGreaterThanOrEqual(31)
    const storedPart = starts(deviceDoc)

    // Back online: acknowledged, inside the write window, not stored when the relay is killed.
    const online = openRoom(socketTo(first.url), 'fleet-k/d1', await deviceToken('fleet-k', 'd1'), deviceDoc)
    await waitFor(() => online.synced(), 'synced again')
    await upload(online, 30, 20)
    expect(await metric(first.httpUrl, 'tidemark_relay_updates_stored_total')).toBe(stored)
    expect(await metric(first.httpUrl, 'tidemark_relay_store_pending_bytes')).toBeGreaterThan(0)
    online.destroy()
    expect(await first.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' })

    const second = await spawnRelay({ ...env, PORT: String(first.port) })
    const dashboard = openRoom(socketTo(second.url), 'fleet-k/d1', await dashboardToken('fleet-k'))
    await waitFor(() => dashboard.synced(), 'the dashboard synced')
    expect(starts(dashboard.doc)).toEqual(storedPart)

    // The device comes back with its document (its write-ahead log) and writes on at once.
    const back = openRoom(socketTo(second.url), 'fleet-k/d1', await deviceToken('fleet-k', 'd1'), deviceDoc)
    await upload(back, 50, 5)
    await waitFor(() => starts(dashboard.doc).length === 55, 'the dashboard has all 55 entries')
    expect(starts(dashboard.doc)).toEqual(starts(deviceDoc))
    expect(back.closed).toEqual([])
    // Its new updates went out before its sync step (queued while connecting): they depend on what
    // the killed relay lost, so the relay held them until the sync step brought it.
    expect(await metric(second.httpUrl, 'tidemark_relay_updates_held_total')).toBe(5)
  })
})
