/**
 * The room store (PGlite, in this process): under a steady stream of writes that supersede
 * earlier entries (as bindDoc writes), compaction keeps the stored bytes on a plateau; a relay
 * restarted on the same data directory serves the state it had.
 */
import { afterAll, expect, it } from 'vitest'
import type * as Y from 'yjs'
import { type Relay, startRelay } from '../src/index.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { clockEntry, dashboardToken, deviceToken, groupEntry, metric, openRoom, relaySocket, replicaLog, SECRET, waitFor, waitUntil } from './support/roomClients.ts'

const ROUNDS = 30
const UPDATES_PER_ROUND = 20
const KEYS = 8

let relay: Relay | undefined
const sockets: ReturnType<typeof relaySocket>[] = []

afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await relay?.close()
  removeDataDirs()
})

async function start(dataDir: string): Promise<Relay> {
  return startRelay({
    port: 0,
    store: { dataDir },
    auth: { secret: SECRET },
    persistence: { writeWindowMs: 20, compactAfterRows: 40, compactAfterBytes: 1024, storeDebounceMs: 50, storeMaxDebounceMs: 200 },
    log: () => undefined,
  })
}

function snapshotOf(doc: Y.Doc): unknown {
  return {
    meta: doc.getMap('tidemark:meta').toJSON(),
    log: JSON.parse(JSON.stringify(replicaLog(doc, 'd1').toJSON(), (_key, value: unknown) => (value instanceof Uint8Array ? [...value] : value))),
  }
}

it('compaction keeps stored bytes on a plateau under steady writes, and a restarted relay serves the same state', async () => {
  const dataDir = freshDataDir()
  relay = await start(dataDir)
  const socket = relaySocket(relay.url)
  sockets.push(socket)
  const device = openRoom(socket, 'fleet-c/d1', await deviceToken('fleet-c', 'd1'))
  await waitFor(() => device.synced(), 'synced')
  device.doc.getMap('tidemark:meta').set('d1', [2, 'cfg'])
  const log = replicaLog(device.doc, 'd1')
  let written = 0
  device.doc.on('update', (update: Uint8Array) => {
    written += update.byteLength
  })
  // One live group per key: each write supersedes the key's previous entry, as bindDoc does.
  let version = 0
  const stored: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < UPDATES_PER_ROUND; i++) {
      version++
      const key = version % KEYS
      device.doc.transact(() => {
        const at = log.toArray().findIndex((entry) => entry[0] === 'g' && entry[2] === key * 60_000)
        if (at >= 0) log.delete(at, 1)
        log.push([groupEntry('d1-temp', key * 60_000, version % 256)])
        const clockAt = log.toArray().findIndex((entry) => entry[0] === 'k')
        if (clockAt >= 0) log.delete(clockAt, 1)
        log.push([clockEntry('d1-temp', 'd1', version)])
      })
    }
    await waitFor(() => !device.provider.hasUnsyncedChanges, `round ${round} acknowledged`)
    const expected = 1 + version
    await waitUntil(async () => (await metric(relay?.httpUrl ?? '', 'tidemark_relay_updates_stored_total')) >= expected, `round ${round} stored`)
    stored.push(await metric(relay.httpUrl, 'tidemark_relay_stored_bytes'))
  }
  // A room's stored bytes stay within its snapshot, the compaction threshold (scaled by the
  // room's spread, at most 1.5) and one write window of updates (at most a round here), however
  // many rounds are written.
  const round = written / ROUNDS
  const bound = 2 * (1.5 * 1024 + round) + 2048
  const late = Math.max(...stored.slice(ROUNDS / 2))
  console.log(`stored bytes per round: ${stored.join(' ')}; bound ${Math.round(bound)}; ${written} bytes of updates written`)
  expect(await metric(relay.httpUrl, 'tidemark_relay_store_seconds_count{op="compact"}')).toBeGreaterThan(ROUNDS / 2)
  expect(Math.max(...stored.slice(3))).toBeLessThan(bound)
  // Without compaction the stored bytes would be every update written, growing by a round's updates every round.
  expect(late).toBeLessThan(written / 10)

  const before = snapshotOf(device.doc)
  device.destroy()
  socket.destroy()
  await relay.close()
  relay = await start(dataDir)
  const socket2 = relaySocket(relay.url)
  sockets.push(socket2)
  const reader = openRoom(socket2, 'fleet-c/d1', await dashboardToken('fleet-c'))
  await waitFor(() => reader.synced(), 'the reader synced')
  expect(snapshotOf(reader.doc)).toEqual(before)
})
