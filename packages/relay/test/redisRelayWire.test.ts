/**
 * What crosses Redis between relays, in process: two Hocuspocus instances with the relay's Redis
 * extension over a redis-server started here. A change crosses as one published message; a
 * change the other relay missed arrives with the next state-vector exchange; changes sent
 * together at the end of an event-loop turn all cross, once each and in order.
 */
import { Hocuspocus } from '@hocuspocus/server'
import IORedis from 'ioredis'
import { afterAll, expect, it, vi } from 'vitest'
import type * as Y from 'yjs'
import { type RedisServer, startRedisServer } from '../scripts/redisServer.ts'
import { RelayMetrics } from '../src/metrics/relayMetrics.ts'
import type { RelayLog } from '../src/relayLog.ts'
import { GuardedRedis } from '../src/scaleout/guardedRedis.ts'
import { waitFor, waitUntil } from './support/roomClients.ts'

let redis: RedisServer | undefined
/** Servers of the later tests, stopped after the run. */
const servers: RedisServer[] = []
const instances: Hocuspocus[] = []
const logged: string[] = []
const log: RelayLog = (level, message) => logged.push(`${level} ${message}`)

afterAll(async () => {
  for (const instance of instances) await instance.closeConnections()
  await redis?.stop()
  for (const server of servers) await server.stop()
})

async function relayOn(url: string): Promise<{ hocuspocus: Hocuspocus; redis: GuardedRedis }> {
  const guarded = new GuardedRedis(url, new RelayMetrics(), log, { repairMs: 1500 })
  const hocuspocus = new Hocuspocus({ quiet: true, extensions: [guarded] })
  instances.push(hocuspocus)
  return { hocuspocus, redis: guarded }
}

/** A relay in this process on `url`, with no periodic repair within a test: only loads and reconnections exchange state vectors. */
function quietRelay(url: string): { hocuspocus: Hocuspocus; redis: GuardedRedis; metrics: RelayMetrics } {
  const metrics = new RelayMetrics()
  const guarded = new GuardedRedis(url, metrics, () => undefined, { repairMs: 3_600_000 })
  const hocuspocus = new Hocuspocus({ quiet: true, extensions: [guarded] })
  instances.push(hocuspocus)
  return { hocuspocus, redis: guarded, metrics }
}

async function publishCalls(url: string): Promise<number> {
  const client = new IORedis(url)
  try {
    const stats = (await client.info('commandstats')).match(/cmdstat_publish:calls=(\d+)/)
    return Number(stats?.[1] ?? 0)
  } finally {
    client.disconnect()
  }
}

/** How many connections subscribe `channel`; -1 while Redis does not answer (it is being started again). */
async function subscribers(url: string, channel: string): Promise<number> {
  const client = new IORedis(url, { lazyConnect: true, maxRetriesPerRequest: 0 })
  client.on('error', () => undefined)
  try {
    await client.connect()
    const [, count] = (await client.pubsub('NUMSUB', channel)) as [string, number]
    return count
  } catch {
    return -1
  } finally {
    client.disconnect()
  }
}

function readings(doc: Y.Doc): unknown[] {
  return doc.getArray('readings').toArray()
}

it('a change crosses as one message; a change the other relay missed arrives with the next state-vector exchange', async () => {
  redis = await startRedisServer()
  const a = await relayOn(redis.url)
  const b = await relayOn(redis.url)
  const onA = await a.hocuspocus.openDirectConnection('fleet/d1')
  const onB = await b.hocuspocus.openDirectConnection('fleet/d1')
  const docA = a.hocuspocus.documents.get('fleet/d1') as Y.Doc
  const docB = b.hocuspocus.documents.get('fleet/d1') as Y.Doc
  await waitFor(() => docA !== undefined && docB !== undefined, 'the room is loaded on both relays')

  const before = await publishCalls(redis.url)
  for (let i = 0; i < 20; i++) await onA.transact((doc) => doc.getArray('readings').push([i]))
  await waitFor(() => readings(docB).length === 20, 'the 20 changes reached relay B')
  // Twenty changes, twenty messages, plus what remains of the exchange each relay starts when it
  // shares the room (at most 12: its state vector and an awareness query; the other's answer, a
  // step 2 and its own state vector, answered in turn; and an awareness answer); no state-vector
  // exchange per change (that would be 4 messages each, 80 in all).
  const published = (await publishCalls(redis.url)) - before
  expect(published).toBeGreaterThanOrEqual(20)
  expect(published).toBeLessThanOrEqual(32)

  // A change relay B never hears of (as if its message was lost), then one it does.
  docA.transact(() => docA.getArray('readings').push(['lost']), a.redis.remoteOrigin)
  // The next change depends on the missed one: B holds it pending until the state-vector
  // exchange (within the repair period) brings the missed change, then shows both.
  await onA.transact((doc) => doc.getArray('readings').push(['after']))
  await waitFor(() => readings(docB).includes('lost') && readings(docB).includes('after'), 'the state-vector exchange brought the missed change')
  expect(readings(docB)).toEqual(readings(docA))

  // Fifty changes in fifty callbacks of one event-loop phase, as fifty sockets read in one I/O
  // phase arrive: the relay sends them to Redis together when the turn ends, and all fifty
  // cross, once each and in order.
  const publishedBefore = await publishCalls(redis.url)
  const origin = { client: 'a socket of relay A' }
  const total = readings(docA).length + 50
  for (let i = 0; i < 50; i++) setImmediate(() => docA.transact(() => docA.getArray('readings').push([`turn ${i}`]), origin))
  await waitFor(() => readings(docB).length === total, 'the 50 changes reached relay B')
  expect(readings(docB)).toEqual(readings(docA))
  expect(readings(docB).slice(-50)).toEqual(Array.from({ length: 50 }, (_, i) => `turn ${i}`))
  expect((await publishCalls(redis.url)) - publishedBefore).toBe(50)
  expect(logged.filter((line) => line.startsWith('warn'))).toEqual([])
  await onA.disconnect()
  await onB.disconnect()
})

it('after Redis comes back, each relay exchanges state vectors for its rooms: what the others missed while it was away arrives without another change', async () => {
  const away = await startRedisServer()
  servers.push(away)
  const port = away.port
  // Only the reconnection may bring the missed changes.
  const a = quietRelay(away.url)
  const b = quietRelay(away.url)
  const onA = await a.hocuspocus.openDirectConnection('fleet/d2')
  const onB = await b.hocuspocus.openDirectConnection('fleet/d2')
  const docA = a.hocuspocus.documents.get('fleet/d2') as Y.Doc
  const docB = b.hocuspocus.documents.get('fleet/d2') as Y.Doc
  await onA.transact((doc) => doc.getArray('readings').push(['before']))
  await waitFor(() => readings(docB).includes('before'), 'the first change crossed')

  await away.stop()
  await waitFor(() => a.metrics.redisErrors > 0 && b.metrics.redisErrors > 0, 'both relays saw Redis go')
  // Changes each relay's clients make while Redis is away: their publishes fail (here, as if
  // they had, they are applied under the Redis origin and not published at all).
  docA.transact(() => docA.getArray('readings').push(['on A while away']), a.redis.remoteOrigin)
  docB.transact(() => docB.getArray('readings').push(['on B while away']), b.redis.remoteOrigin)

  servers.push(await startRedisServer({ port }))
  await waitFor(
    () => readings(docB).includes('on A while away') && readings(docA).includes('on B while away'),
    'the changes made while Redis was away crossed once it was back, with no further change',
  )
  expect(readings(docB)).toEqual(readings(docA))
  await onA.disconnect()
  await onB.disconnect()
})

it('a room opened while Redis is away is served by its relay alone, and shared once Redis is back: what each relay took meanwhile crosses, and so do later changes', async () => {
  const away = await startRedisServer()
  servers.push(away)
  const port = away.port
  // Only the sharing of the room may bring the changes.
  const a = quietRelay(away.url)
  const b = quietRelay(away.url)
  const onA = await a.hocuspocus.openDirectConnection('fleet/d5')
  await onA.transact((doc) => doc.getArray('readings').push(['before']))
  // Loaded before its relay's first connection to Redis was ready, the room is shared once it is.
  await waitFor(() => a.redis.unsharedRooms === 0, 'the room shared on relay A')

  await away.stop()
  await waitFor(() => a.metrics.redisErrors > 0 && b.metrics.redisErrors > 0, 'both relays saw Redis go')
  // Relay B had not loaded the room: it opens it, from its own store, and serves it alone.
  const onB = await b.hocuspocus.openDirectConnection('fleet/d5')
  expect(b.redis.unsharedRooms).toBe(1)
  expect(a.redis.unsharedRooms).toBe(0)
  await onB.transact((doc) => doc.getArray('readings').push(['on B while away']))
  await onA.transact((doc) => doc.getArray('readings').push(['on A while away']))
  const docA = a.hocuspocus.documents.get('fleet/d5') as Y.Doc
  const docB = b.hocuspocus.documents.get('fleet/d5') as Y.Doc
  expect(readings(docB)).toEqual(['on B while away'])

  servers.push(await startRedisServer({ port }))
  await waitFor(() => readings(docB).length === 3 && readings(docA).length === 3, 'what each relay took while Redis was away crossed once it was back')
  expect(readings(docB)).toEqual(readings(docA))
  expect(b.redis.unsharedRooms).toBe(0)
  // Subscribed now: a change on B crosses as it is made.
  await onB.transact((doc) => doc.getArray('readings').push(['after']))
  await waitFor(() => readings(docA).includes('after'), 'a later change on B reached A')
  expect(readings(docA)).toEqual(readings(docB))

  // Redis goes again, and B's room unloads meanwhile: its channel cannot be unsubscribed then, and
  // the client subscribes it again when it reconnects. B ends that subscription once Redis is back.
  const errors = vi.spyOn(console, 'error')
  const url = `redis://127.0.0.1:${port}`
  expect(await subscribers(url, 'tidemark:fleet/d5')).toBe(2)
  await (servers.at(-1) as RedisServer).stop()
  await onB.disconnect()
  await waitFor(() => b.hocuspocus.documents.size === 0, 'the room unloaded on B')
  await waitFor(() => b.redis.staleSubscriptions === 1, "B's unsubscribe failed")
  servers.push(await startRedisServer({ port }))
  await waitUntil(async () => (await subscribers(url, 'tidemark:fleet/d5')) === 1, 'only relay A subscribes the room once Redis is back')
  await waitFor(() => b.redis.staleSubscriptions === 0, 'B ended the subscription')
  expect(errors).not.toHaveBeenCalled()
  errors.mockRestore()
  await onA.disconnect()
})

it('a Redis that stops answering without closing its connections holds no room load: the room opens unshared and is shared once Redis answers', async () => {
  const frozen = await startRedisServer()
  servers.push(frozen)
  const { hocuspocus, redis: guarded, metrics } = quietRelay(frozen.url)
  await waitFor(() => guarded.unsharedRooms === 0 && metrics.redisErrors === 0, 'connected')
  await (await hocuspocus.openDirectConnection('fleet/warm')).disconnect()
  process.kill(frozen.pid, 'SIGSTOP')
  let opened = false
  const connecting = hocuspocus.openDirectConnection('fleet/frozen').then((connection) => {
    opened = true
    return connection
  })
  try {
    // Without a bound the load waits for the subscription, as long as Redis keeps silent.
    await waitFor(() => opened, 'the room opened while Redis does not answer', 10_000)
    expect(guarded.unsharedRooms).toBe(1)
  } finally {
    process.kill(frozen.pid, 'SIGCONT')
  }
  await waitFor(() => guarded.unsharedRooms === 0, 'the room shared once Redis answered')
  await (await connecting).disconnect()
})

it('after Redis refuses a command on a live connection, rooms loaded later are still shared, and a failed answer to another relay is counted, not left unhandled', async () => {
  const strict = await startRedisServer()
  servers.push(strict)
  const admin = new IORedis(strict.url)
  // Relay A connects as a user of its own, whose publishes the test can refuse.
  await admin.call('ACL', 'SETUSER', 'relay-a', 'on', '>relay-a-password', '~*', '&*', '+@all')
  const a = quietRelay(strict.url.replace('redis://', 'redis://relay-a:relay-a-password@'))
  const b = quietRelay(strict.url)
  try {
    const onA = await a.hocuspocus.openDirectConnection('fleet/strict')
    await waitFor(() => a.redis.unsharedRooms === 0, 'the room shared on A')
    await admin.call('ACL', 'SETUSER', 'relay-a', '-publish')
    // A's publish is refused (NOPERM) on a connection that stays up: no reconnection follows.
    await onA.transact((doc) => doc.getArray('readings').push(['refused']))
    await waitFor(() => a.metrics.redisErrors > 0, "A's publish refused")
    // B loads the room and sends its state vector: A's answer, published without being awaited, is refused too.
    const failedBefore = a.metrics.redisErrors
    const onB = await b.hocuspocus.openDirectConnection('fleet/strict')
    await waitFor(() => a.metrics.redisErrors > failedBefore, "A's answer to B refused, and counted")
    await admin.call('ACL', 'SETUSER', 'relay-a', '+publish')
    // A room A loads now is shared: its changes cross.
    const later = await a.hocuspocus.openDirectConnection('fleet/later')
    expect(a.redis.unsharedRooms).toBe(0)
    const onBLater = await b.hocuspocus.openDirectConnection('fleet/later')
    await later.transact((doc) => doc.getArray('readings').push(['crossed']))
    await waitFor(() => readings(b.hocuspocus.documents.get('fleet/later') as Y.Doc).includes('crossed'), 'a change in a room loaded after the refusal crossed')
    for (const connection of [onA, onB, later, onBLater]) await connection.disconnect()
  } finally {
    admin.disconnect()
  }
})

it('an update larger than what Redis lets a subscriber have pending (32 MB) crosses, in chunks; so does the answer to a relay that loads the room', { timeout: 60_000 }, async () => {
  const server = await startRedisServer()
  servers.push(server)
  const a = quietRelay(server.url)
  const b = quietRelay(server.url)
  const onA = await a.hocuspocus.openDirectConnection('fleet/large')
  let onB = await b.hocuspocus.openDirectConnection('fleet/large')
  await waitFor(() => a.redis.unsharedRooms === 0 && b.redis.unsharedRooms === 0, 'the room shared on both relays')
  // A room as large as `maxRoomBytes: 64 << 20` admits: one message of it, whole, would pass
  // Redis's default `client-output-buffer-limit pubsub` and get every subscriber of the room cut.
  const backlog = new Uint8Array(40 << 20).fill(7)
  await onA.transact((doc) => doc.getMap('state').set('backlog', backlog))
  await onA.transact((doc) => doc.getMap('state').set('after', 1))
  const docB = (): Y.Doc => b.hocuspocus.documents.get('fleet/large') as Y.Doc
  await waitFor(() => docB().getMap('state').get('after') === 1, 'the large update and the one after it reached relay B')
  expect((docB().getMap('state').get('backlog') as Uint8Array).byteLength).toBe(40 << 20)
  // B lets the room go and loads it again (empty: no store here): A answers its state vector with all of it.
  await onB.disconnect()
  await waitFor(() => !b.hocuspocus.documents.has('fleet/large'), 'the room unloaded on B')
  onB = await b.hocuspocus.openDirectConnection('fleet/large')
  await waitFor(() => docB().getMap('state').get('after') === 1, 'relay B, loading the room again, got the whole of it')
  expect((docB().getMap('state').get('backlog') as Uint8Array).byteLength).toBe(40 << 20)
  await waitFor(() => a.redis.assemblingBytes + b.redis.assemblingBytes === 0, 'no message left half put together')
  await onA.disconnect()
  await onB.disconnect()
})
