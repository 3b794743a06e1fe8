/**
 * 10,000 seeded hostile frames against a relay process: random bytes, truncated and bit-flipped
 * protocol messages, invalid UTF-8 text frames, oversized frames, forged and malformed updates,
 * bad awareness, broadcasts, unknown types, parts of messages (random, out of order, announcing
 * more than they bring, or a valid update cut up). The process stays up, its memory stays
 * bounded (no parts left assembling once the sockets close), and another room keeps syncing
 * throughout.
 *
 *   TIDEMARK_SEED=<seed> pnpm vitest run packages/relay/test/hostileFrames.test.ts
 */
import { seededRandom } from '@tidemark/seeded-random'
import { seed } from '@tidemark/seeded-random/property'
import * as encoding from 'lib0/encoding'
import { afterAll, expect, it } from 'vitest'
import WebSocket from 'ws'
import * as Y from 'yjs'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { authFrame, awarenessFrame, partFrame, syncFrame } from './support/hocuspocusFrames.ts'
import { type Exit, killRelays, type RelayProcess, spawnRelay } from './support/relayProcess.ts'
import { dashboardToken, deviceToken, groupEntry, openRoom, relaySocket, replicaLog, SECRET_TEXT, scrapeMetrics, signToken, waitFor, waitUntil } from './support/roomClients.ts'

const FRAMES = 10_000
const MAX_MESSAGE_BYTES = 64 << 10
const POOL = 8
/** The good room gets an update every this many hostile frames, and must deliver it. */
const GOOD_EVERY = 250
const RSS_GROWTH_BOUND = 150 << 20
const FILE = 'packages/relay/test/hostileFrames.test.ts'

const socketsToClose: { destroy(): void }[] = []

afterAll(async () => {
  for (const socket of socketsToClose) socket.destroy()
  await killRelays()
  removeDataDirs()
})

function frame(room: string, write: (encoder: encoding.Encoder) => void): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarString(encoder, room)
  write(encoder)
  return encoding.toUint8Array(encoder)
}

const textFrame = (room: string, type: number, text: string): Uint8Array =>
  frame(room, (e) => {
    encoding.writeVarUint(e, type)
    encoding.writeVarString(e, text)
  })

function isOpen(ws: WebSocket): boolean {
  return ws.readyState === WebSocket.OPEN
}

/** A pool socket: replaced by a new one when the relay closes it. */
interface PoolSocket {
  ws: WebSocket
  open: Promise<void>
  authed: Set<string>
}

it(`${FRAMES} hostile frames: the relay stays up, its memory bounded, another room syncing`, async () => {
  const random = seededRandom(seed)
  const int = (n: number): number => Math.floor(random() * n)
  const bytes = (n: number): Uint8Array => Uint8Array.from({ length: n }, () => int(256))
  const relay: RelayProcess = await spawnRelay({
    TIDEMARK_DATA_DIR: freshDataDir(),
    TIDEMARK_AUTH_SECRET: SECRET_TEXT,
    TIDEMARK_MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES),
    TIDEMARK_STORE_DEBOUNCE_MS: '100',
  })
  // Recorded when the process exits: read at the end, after every frame was handled.
  let exit: Exit | undefined
  void relay.exited.then((how) => {
    exit = how
  })
  try {
    // The good room: a device writing, a dashboard reading, on their own sockets.
    const writerSocket = relaySocket(relay.url)
    const readerSocket = relaySocket(relay.url)
    socketsToClose.push(writerSocket, readerSocket)
    const writer = openRoom(writerSocket, 'fleet-good/d1', await deviceToken('fleet-good', 'd1'))
    const reader = openRoom(readerSocket, 'fleet-good/d1', await dashboardToken('fleet-good'))
    await waitFor(() => writer.synced() && reader.synced(), 'the good room synced')
    let goodSent = 0
    const lags: number[] = []
    const goodUpdate = async (): Promise<void> => {
      goodSent++
      const sentAt = performance.now()
      replicaLog(writer.doc, 'd1').push([groupEntry('d1-temp', goodSent * 60_000)])
      await waitFor(() => replicaLog(reader.doc, 'd1').length === goodSent, `good update ${goodSent} on the dashboard`, 30_000)
      lags.push(performance.now() - sentAt)
    }
    await goodUpdate()

    // Hostile devices: valid tokens for their own rooms, documents to forge updates from.
    const hostileRooms = Array.from({ length: POOL }, (_, i) => `fleet-h/h${i}`)
    const tokens = await Promise.all(hostileRooms.map((_, i) => deviceToken('fleet-h', `h${i}`)))
    const wrongToken = await signToken({ sub: 'x', role: 'device', rooms: ['fleet-h/*'], replicas: ['x'], sources: ['x'] }, { secret: new TextEncoder().encode('not-the-relays-secret-not-the-relays-secret') })
    const docs = hostileRooms.map(() => new Y.Doc())
    const validUpdate = (i: number): Uint8Array => {
      const doc = docs[i] as Y.Doc
      let update: Uint8Array = new Uint8Array(0)
      doc.once('update', (u: Uint8Array) => {
        update = u
      })
      replicaLog(doc, `h${i}`).push([groupEntry(`h${i}-temp`, int(1000) * 60_000)])
      return update
    }
    const forged = (): Uint8Array => {
      const doc = new Y.Doc()
      const pick = int(5)
      if (pick === 0) replicaLog(doc, 'someone-else').push([groupEntry('x-temp', 0)])
      else if (pick === 1) doc.getMap('tidemark:meta').set('someone-else', [2, 'c'])
      else if (pick === 2) doc.getMap('elsewhere').set('k', 1)
      else if (pick === 3) replicaLog(doc, 'h0').push([['g', 'w', Number.NaN, 'h0-temp', '[]', new Uint8Array(3)]])
      else doc.getText('text').insert(0, 'hello')
      return Y.encodeStateAsUpdate(doc)
    }
    const mutate = (valid: Uint8Array): Uint8Array => {
      const copy = valid.slice()
      const flips = 1 + int(4)
      for (let f = 0; f < flips && copy.length > 0; f++) copy[int(copy.length)] = int(256)
      return int(3) === 0 ? copy.slice(0, int(copy.length + 1)) : copy
    }

    const pool: PoolSocket[] = []
    const connect = (): PoolSocket => {
      const ws = new WebSocket(relay.url)
      ws.on('error', () => undefined)
      const open = new Promise<void>((resolve) => {
        ws.once('open', () => resolve())
        ws.once('close', () => resolve())
      })
      return { ws, open, authed: new Set() }
    }
    for (let i = 0; i < POOL; i++) pool.push(connect())
    const kinds = new Map<string, number>()
    const count = (kind: string): void => {
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1)
    }

    const before = await scrapeMetrics(relay.httpUrl)
    const rssBefore = before.get('process_resident_memory_bytes') ?? 0
    const started = performance.now()
    for (let n = 0; n < FRAMES; n++) {
      const slot = int(POOL)
      let socket = pool[slot] as PoolSocket
      if (!isOpen(socket.ws)) {
        await socket.open
        if (!isOpen(socket.ws)) {
          socket = connect()
          pool[slot] = socket
          await socket.open
        }
      }
      const room = hostileRooms[slot] as string
      const roll = random()
      let data: Uint8Array | string
      let binary = true
      if (roll < 0.18) {
        count('random bytes')
        data = bytes(int(512))
      } else if (roll < 0.3) {
        count('truncated message')
        const whole = [authFrame(room, tokens[slot] as string), syncFrame(room, 1, validUpdate(slot)), awarenessFrame(room, bytes(20))][int(3)] as Uint8Array
        data = whole.slice(0, int(whole.length))
      } else if (roll < 0.38) {
        count('invalid UTF-8 text')
        data = Buffer.from([0xc3, 0x28, ...bytes(int(64)), 0xff, 0xfe])
        binary = false
      } else if (roll < 0.4) {
        count('oversized')
        data = new Uint8Array(MAX_MESSAGE_BYTES + 1 + int(16 << 10))
      } else {
        // Protocol messages for the socket's own room, authenticated first.
        if (!socket.authed.has(room) || random() < 0.05) {
          socket.ws.send(authFrame(room, random() < 0.1 ? wrongToken : (tokens[slot] as string)))
          socket.authed.add(room)
        }
        const pick = int(14)
        const names = ['forged update', 'bit-flipped update', 'random update', 'random step 2', 'bad awareness', 'broadcast', 'unknown type', 'unknown sync step', 'bad state vector', 'other room', 'stateless', 'valid update', 'random part', 'valid update in parts']
        count(names[pick] as string)
        if (pick === 0) data = syncFrame(room, 2, forged())
        else if (pick === 1) data = syncFrame(room, 2, mutate(validUpdate(slot)))
        else if (pick === 2) data = syncFrame(room, 2, bytes(int(300)))
        else if (pick === 3) data = syncFrame(room, 1, bytes(int(300)), 4)
        else if (pick === 4) data = awarenessFrame(room, bytes(int(80)))
        else if (pick === 5) data = textFrame(room, 6, '{"tidemark":"refused","room":"fleet-good/d1","reason":"forged"}')
        else if (pick === 6) data = frame(room, (e) => encoding.writeVarUint(e, 8 + int(200)))
        else if (pick === 7) {
          data = frame(room, (e) => {
            encoding.writeVarUint(e, 0)
            encoding.writeVarUint(e, 3 + int(50))
          })
        }
        else if (pick === 8) data = syncFrame(room, 0, bytes(int(40)))
        else if (pick === 9) data = syncFrame(`fleet-good/${int(3) === 0 ? 'd1' : `x${int(100)}`}`, 2, validUpdate(slot))
        else if (pick === 10) data = textFrame(room, 5, 'x'.repeat(int(200)))
        else if (pick === 11) data = syncFrame(room, 2, validUpdate(slot))
        else if (pick === 12) data = partFrame(room, int(4), int(5), int(MAX_MESSAGE_BYTES * 20), bytes(int(2048)))
        else {
          // All but the last part sent here; the last is this frame.
          const whole = syncFrame(room, 2, validUpdate(slot))
          const count = 2 + int(3)
          const size = Math.ceil(whole.length / count)
          for (let i = 0; i < count - 1; i++) socket.ws.send(partFrame(room, i, count, whole.length, whole.subarray(i * size, (i + 1) * size)))
          data = partFrame(room, count - 1, count, whole.length, whole.subarray((count - 1) * size))
        }
      }
      socket.ws.send(data, { binary })
      if (n % GOOD_EVERY === GOOD_EVERY - 1) await goodUpdate()
    }
    await goodUpdate()
    const seconds = (performance.now() - started) / 1000
    const after = await scrapeMetrics(relay.httpUrl)
    const rssAfter = after.get('process_resident_memory_bytes') ?? 0
    const refusals = [...after].filter(([name]) => name.startsWith('tidemark_relay_refusals_total')).map(([name, value]) => `${/reason="([^"]+)"/.exec(name)?.[1]} ${value}`)
    console.log(
      [
        `seed ${seed}: ${FRAMES} hostile frames in ${seconds.toFixed(1)} s over ${POOL} sockets`,
        `kinds: ${[...kinds].map(([kind, n]) => `${kind} ${n}`).join(', ')}`,
        `relay RSS ${(rssBefore / 2 ** 20).toFixed(0)} MiB before, ${(rssAfter / 2 ** 20).toFixed(0)} MiB after (bound: +${RSS_GROWTH_BOUND / 2 ** 20} MiB)`,
        `good room: ${goodSent} updates delivered, lag max ${Math.max(...lags).toFixed(0)} ms, median ${[...lags].sort((a, b) => a - b)[lags.length >> 1]?.toFixed(0)} ms`,
        `refusals: ${refusals.join(', ')}; socket errors ${after.get('tidemark_relay_socket_errors_total')}; unhandled rejections ${after.get('tidemark_relay_unhandled_rejections_total')}; messages put together from parts ${after.get('tidemark_relay_messages_in_parts_total')}`,
      ].join('\n'),
    )
    for (const socket of pool) socket.ws.terminate()
    await waitUntil(async () => (await scrapeMetrics(relay.httpUrl)).get('tidemark_relay_assembling_bytes') === 0, 'the closed sockets released their parts')
    expect(exit).toBeUndefined()
    expect((await fetch(`${relay.httpUrl}/healthz`)).status).toBe(200)
    expect(after.get('tidemark_relay_unhandled_rejections_total')).toBe(0)
    expect(rssAfter - rssBefore).toBeLessThan(RSS_GROWTH_BOUND)
    // The hostile frames reached the relay's checks: it refused some of them.
    const refused = [...after].filter(([name]) => name.startsWith('tidemark_relay_refusals_total')).reduce((n, [, value]) => n + value, 0)
    expect(refused).toBeGreaterThan(0)
    // Some valid updates sent in parts were put together whole.
    expect(after.get('tidemark_relay_messages_in_parts_total')).toBeGreaterThan(0)
    // Nothing a hostile socket sent reached the good room.
    expect(replicaLog(reader.doc, 'd1').length).toBe(goodSent)
    expect([...reader.doc.share.keys()].sort()).toEqual(['tidemark:replica:d1'])
    expect(reader.stateless).toEqual([])
  } catch (error) {
    const repro = `TIDEMARK_SEED=${seed} pnpm vitest run ${FILE}`
    console.error(`seed ${seed}; repro: ${repro}\nrelay stderr (tail):\n${relay.stderr().slice(-4000)}`)
    throw new Error(`seed ${seed}; repro: ${repro}: ${error instanceof Error ? error.message : String(error)}`, { cause: error })
  }
})
