/**
 * Promises of the package README that no topical test pinned: the configuration table against
 * `relayOptionsFromEnv` and the defaults, the metrics table against `/metrics`, the whole-socket
 * closes (4400, 1001), the `nbf` allowance, the number of keys, and `/dev/token`'s `ttl`. The
 * tables are read from the README itself, so a row and the code cannot drift apart unseen.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { decodeJwt, SignJWT } from 'jose'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import WebSocket from 'ws'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import {
  DEFAULT_LIMITS,
  DEFAULT_PERSISTENCE,
  LIMIT_VARIABLES,
  openPglite,
  type Relay,
  type RelayLimits,
  Refusal,
  resolveRelayOptions,
  type SqlClient,
  relayOptionsFromEnv,
  TokenVerifier,
} from '../src/index.ts'
import { LatencySummary } from '../src/metrics/latencySummary.ts'
import { RelayMetrics } from '../src/metrics/relayMetrics.ts'
import { RoomStore } from '../src/store/roomStore.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { authFrame, messageFrame, syncFrame, updateFrame } from './support/hocuspocusFrames.ts'
import { startTestRelay } from './support/testRelays.ts'
import { dashboardToken, deviceToken, groupEntry, metric, openRoom, type RoomClient, rawSocket, relaySocket, replicaLog, SECRET, SECRET_TEXT, signToken, waitFor, waitUntil } from './support/roomClients.ts'

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

const relays: Relay[] = []
const sockets: ReturnType<typeof relaySocket>[] = []
const clients: RoomClient[] = []

afterEach(() => {
  for (const client of clients.splice(0)) client.destroy()
  for (const socket of sockets.splice(0)) socket.destroy()
})

afterAll(async () => {
  // A relay a test closed itself is closed already.
  await Promise.all(relays.splice(0).map((relay) => relay.close().catch(() => undefined)))
  removeDataDirs()
})

/** The rows of the README table whose header row starts with `| <firstHeader> |`, as cells. */
function readmeTable(firstHeader: string): string[][] {
  const lines = README.split('\n')
  const start = lines.findIndex((line) => line.startsWith(`| ${firstHeader} |`))
  if (start < 0) throw new Error(`README has no table headed "${firstHeader}"`)
  const rows: string[][] = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break
    rows.push(
      line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim()),
    )
  }
  return rows
}

/** Names in backticks in a cell, without a label part (`name{label}` → `name`). */
function codeNames(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map(([, name]) => (name ?? '').replace(/\{.*\}$/, ''))
}

/** A README default: `1 MiB`, `256 KiB`, or the last value in backticks (`` `1234` ``, `` a quarter of … (`2500`) ``); '' when empty. */
function readmeDefault(cell: string): string | number {
  const size = /^(\d+) (KiB|MiB)$/.exec(cell)
  if (size !== null) return Number(size[1]) * (size[2] === 'KiB' ? 1 << 10 : 1 << 20)
  const code = codeNames(cell).at(-1)
  if (code === undefined) return ''
  return /^\d+$/.test(code) ? Number(code) : code
}

const LIMIT_OF_VARIABLE = new Map(Object.entries(LIMIT_VARIABLES).map(([name, variable]) => [variable, name as keyof RelayLimits]))

describe('the Configuration table', () => {
  const rows = readmeTable('variable').map(([variable = '', fallback = '']) => ({ variable: codeNames(variable)[0] ?? variable, fallback }))

  it('names exactly the variables the command reads', () => {
    const read = new Set<string>()
    const env = new Proxy<Record<string, string | undefined>>(
      { TIDEMARK_AUTH_SECRET: SECRET_TEXT },
      {
        get(target, key) {
          if (typeof key === 'string') read.add(key)
          return target[key as string]
        },
      },
    )
    relayOptionsFromEnv(env)
    // A public key file is read only when no secret is given: that branch reads the same names.
    expect([...read].sort()).toEqual(rows.map((row) => row.variable).sort())
  })

  it('gives each variable the default of its row', () => {
    const resolved = resolveRelayOptions(relayOptionsFromEnv({ TIDEMARK_AUTH_SECRET: SECRET_TEXT }))
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    let logged: string[]
    try {
      resolved.log('info', 'an info line')
      resolved.log('warn', 'a warn line')
      logged = stderr.mock.calls.map(([line]) => String(line))
    } finally {
      stderr.mockRestore()
    }
    const actual: Record<string, string | number> = {
      HOST: resolved.host,
      PORT: resolved.port,
      TIDEMARK_DATA_DIR: 'dataDir' in resolved.store ? resolved.store.dataDir : '(no data directory)',
      DATABASE_URL: 'databaseUrl' in resolved.store ? resolved.store.databaseUrl : '',
      REDIS_URL: resolved.redisUrl ?? '',
      TIDEMARK_AUTH_SECRET: '',
      TIDEMARK_AUTH_PUBLIC_KEY: '',
      TIDEMARK_AUTH_PREVIOUS_SECRET: '',
      TIDEMARK_DEV_TOKENS: resolved.devTokens ? '1' : '0',
      TIDEMARK_STORE_DEBOUNCE_MS: resolved.persistence.writeWindowMs,
      // `warn`: a warn line is written, an info line is not.
      TIDEMARK_LOG: logged.join('') === 'tidemark-relay warn: a warn line\n' ? 'warn' : `lines ${JSON.stringify(logged)}`,
    }
    for (const { variable, fallback } of rows) {
      const limit = LIMIT_OF_VARIABLE.get(variable)
      const value = limit === undefined ? actual[variable] : resolved.limits[limit]
      expect(String(value), `${variable}: README says ${JSON.stringify(fallback)}`).toBe(String(readmeDefault(fallback)))
    }
    expect(resolved.limits).toEqual(DEFAULT_LIMITS)
    expect(resolved.persistence).toEqual(DEFAULT_PERSISTENCE)
  })

  it('hands each limit variable to its limit', () => {
    const limitRows = rows.filter((row) => LIMIT_OF_VARIABLE.has(row.variable))
    expect(limitRows.map((row) => row.variable).sort()).toEqual(Object.values(LIMIT_VARIABLES).sort())
    // A distinct value for each, TIDEMARK_MAX_ROOMS above the rooms per subject, and the queued
    // bytes above twice the room bytes (neither may pass the other).
    const env: Record<string, string> = { TIDEMARK_AUTH_SECRET: SECRET_TEXT, TIDEMARK_STORE_DEBOUNCE_MS: '777', TIDEMARK_LOG: 'info' }
    limitRows.forEach(({ variable }, i) => {
      env[variable] = String(variable === 'TIDEMARK_MAX_ROOMS' ? 9_999 : variable === 'TIDEMARK_MAX_QUEUED_BYTES' ? 99_999 : 1_001 + i)
    })
    const resolved = resolveRelayOptions(relayOptionsFromEnv(env))
    for (const { variable } of limitRows) expect(resolved.limits[LIMIT_OF_VARIABLE.get(variable) as keyof RelayLimits], variable).toBe(Number(env[variable]))
    expect(resolved.persistence.writeWindowMs).toBe(777)
  })
})

describe('startRelay options', () => {
  const auth = { secret: SECRET }

  it('refuses an unknown option with a TypeError, also inside limits and persistence', () => {
    expect(() => resolveRelayOptions({ auth, maxRooms: 5 } as never)).toThrow(new TypeError('startRelay: unknown option maxRooms'))
    expect(() => resolveRelayOptions({ auth, limits: { maxRoom: 5 } as never })).toThrow(new TypeError('startRelay: unknown option limits.maxRoom'))
    expect(() => resolveRelayOptions({ auth, persistence: { writeWindow: 5 } as never })).toThrow(new TypeError('startRelay: unknown option persistence.writeWindow'))
  })

  it('takes integers of at least 1, times at most 2147483647, in limits and persistence alike', () => {
    expect(() => resolveRelayOptions({ auth, limits: { updateBurst: 0 } })).toThrow(RangeError)
    expect(() => resolveRelayOptions({ auth, limits: { maxRoomBytes: 1.5 } })).toThrow(RangeError)
    expect(() => resolveRelayOptions({ auth, persistence: { compactAfterRows: 0 } })).toThrow(RangeError)
    for (const [group, name] of [['limits', 'idleRoomMs'], ['limits', 'authTimeoutMs'], ['limits', 'partStallMs'], ['persistence', 'writeWindowMs'], ['persistence', 'storeDebounceMs'], ['persistence', 'storeMaxDebounceMs']] as const) {
      expect(resolveRelayOptions({ auth, [group]: { [name]: 2_147_483_647 } })[group]).toMatchObject({ [name]: 2_147_483_647 })
      expect(() => resolveRelayOptions({ auth, [group]: { [name]: 2_147_483_648 } }), `${group}.${name}`).toThrow(RangeError)
    }
    // Counts and bytes have no such bound.
    expect(resolveRelayOptions({ auth, limits: { maxRoomBytes: 2 ** 32 } }).limits.maxRoomBytes).toBe(2 ** 32)
  })

  it('leaves maxRoomsPerSubject, when not given, at a quarter of the maxRooms given (at least 1)', () => {
    expect(resolveRelayOptions({ auth, limits: { maxRooms: 100 } }).limits.maxRoomsPerSubject).toBe(25)
    expect(resolveRelayOptions({ auth, limits: { maxRooms: 3 } }).limits.maxRoomsPerSubject).toBe(1)
    expect(resolveRelayOptions({ auth }).limits.maxRoomsPerSubject).toBe(2_500)
  })
})

describe('the metrics table', () => {
  it('names metrics the relay exposes, each of the type it says', async () => {
    const relay = await startTestRelay(relays)
    const text = await (await fetch(`${relay.httpUrl}/metrics`)).text()
    const exposed = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => [name, type]))
    const documented = readmeTable('metric').flatMap(([names = '', meaning = '']) => {
      // `gauge`, `counter: …`, `counters`, `summary (…)`; a row without one is typed by its names.
      const said = /^(gauge|counter|summary)s?\b/.exec(meaning)?.[1]
      return codeNames(names).map((name) => ({ name, type: said ?? (name.endsWith('_total') ? 'counter' : 'gauge') }))
    })
    expect(documented.length).toBeGreaterThan(30)
    for (const { name, type } of documented) expect(exposed.get(name), name).toBe(type)
  })
})

describe('tidemark_relay_store_seconds', () => {
  it('gives count and sum of every observation, and quantiles 0.5/0.9/0.99 of the last 1024', () => {
    const summary = new LatencySummary()
    // 1..2048 s: the last 1024 are 1025..2048.
    for (let seconds = 1; seconds <= 2_048; seconds++) summary.observe(seconds)
    expect(summary.lines('tidemark_relay_store_seconds', 'op="flush"')).toEqual([
      'tidemark_relay_store_seconds{op="flush",quantile="0.5"} 1537',
      'tidemark_relay_store_seconds{op="flush",quantile="0.9"} 1946',
      'tidemark_relay_store_seconds{op="flush",quantile="0.99"} 2038',
      `tidemark_relay_store_seconds_sum{op="flush"} ${(2_048 * 2_049) / 2}`,
      'tidemark_relay_store_seconds_count{op="flush"} 2048',
    ])
  })
})

/** Hocuspocus message types the relay sends: sync, and the CLOSE of one room connection. */
const SYNC = 0
const CLOSE = 7

describe('the whole socket is closed', () => {
  it('4400 tidemark:malformed-message for a frame that does not start with a room, counted; the relay serves on', async () => {
    const relay = await startTestRelay(relays)
    const { ws, closed } = await rawSocket(relay)
    // A room name announced as 127 bytes, none of which follow.
    ws.send(Uint8Array.of(0x7f))
    expect(await closed).toEqual({ code: 4400, reason: 'tidemark:malformed-message' })
    expect(await metric(relay.httpUrl, 'tidemark_relay_refusals_total{reason="malformed-message"}')).toBe(1)
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const dashboard = openRoom(socket, 'fleet-r/d1', await dashboardToken('fleet-r'))
    clients.push(dashboard)
    await waitFor(() => dashboard.synced(), 'another socket syncs')
  })

  it('1001 tidemark:shutdown when the relay closes, after a CLOSE of each room connection with tidemark:shutdown', async () => {
    const lines: [string, string][] = []
    const relay = await startTestRelay(relays, { log: (level, line) => lines.push([level, line]) })
    const idle = await rawSocket(relay)
    const { ws, closed } = await rawSocket(relay)
    const room = 'fleet-r/d1'
    const received: { type: number; body: decoding.Decoder }[] = []
    ws.on('message', (data: Buffer) => {
      const decoder = decoding.createDecoder(new Uint8Array(data))
      if (decoding.readVarString(decoder) === room) received.push({ type: decoding.readVarUint(decoder), body: decoder })
    })
    ws.send(authFrame(room, await dashboardToken('fleet-r')))
    ws.send(syncFrame(room, 0, Y.encodeStateVector(new Y.Doc())))
    // Its connection is in the room once the room loaded: the relay answers the sync step 1 then.
    await waitFor(() => received.some((frame) => frame.type === SYNC), 'the room opened and answered the sync step 1')
    let closesBeforeSocket: string[] = []
    const socketClosed = closed.then((close) => {
      closesBeforeSocket = received.filter((frame) => frame.type === CLOSE).map((frame) => decoding.readVarString(frame.body))
      return close
    })
    await relay.close()
    expect(await idle.closed).toEqual({ code: 1001, reason: 'tidemark:shutdown' })
    expect(await socketClosed).toEqual({ code: 1001, reason: 'tidemark:shutdown' })
    expect(closesBeforeSocket).toEqual(['tidemark:shutdown'])
    // Logged at info, as the whole-socket closes of the table are.
    expect(lines.filter(([, line]) => line.startsWith('shut'))).toEqual([
      ['info', 'shutting down: closing 2 sockets and 1 room connections in 1 rooms with 1001 tidemark:shutdown'],
      ['info', 'shut down: every accepted update stored'],
    ])
  })
})

describe('tokens', () => {
  const NOW = Date.UTC(2026, 11, 1)
  const sign = (claims: Record<string, unknown>, key: Uint8Array | KeyObject, alg = 'HS256'): Promise<string> =>
    new SignJWT({ sub: 'd07', role: 'dashboard', rooms: ['fleet-a/*'], ...claims })
      .setProtectedHeader({ alg })
      .setExpirationTime(NOW / 1000 + 600)
      .sign(key)
  const verdict = async (verifier: TokenVerifier, token: string): Promise<string> => {
    const result = await verifier.verify(token)
    return result instanceof Refusal ? result.text : 'granted'
  }

  it('take an nbf up to 60 s ahead of the relay clock; one second further is bad-token', async () => {
    const verifier = new TokenVerifier({ secret: SECRET }, () => NOW)
    expect(await verdict(verifier, await sign({ nbf: NOW / 1000 + 60 }, SECRET))).toBe('granted')
    expect(await verdict(verifier, await sign({ nbf: NOW / 1000 + 61 }, SECRET))).toBe('bad-token "nbf" claim timestamp check failed')
  })

  it('need an exp, and are taken whatever iss and aud they carry', async () => {
    const verifier = new TokenVerifier({ secret: SECRET }, () => NOW)
    const withoutExp = await new SignJWT({ sub: 'd07', role: 'dashboard', rooms: ['fleet-a/*'] }).setProtectedHeader({ alg: 'HS256' }).sign(SECRET)
    expect(await verdict(verifier, withoutExp)).toBe('bad-token missing required "exp" claim')
    expect(await verdict(verifier, await sign({ iss: 'https://another-service.example', aud: 'another-audience' }, SECRET))).toBe('granted')
  })

  it('are tried against at most 8 keys, each of a PEM file up to the last; a ninth stops the start', async () => {
    const pairs = Array.from({ length: 9 }, () => generateKeyPairSync('ed25519'))
    const pem = (pair: (typeof pairs)[number]): string => pair.publicKey.export({ type: 'spki', format: 'pem' }).toString()
    const eight = new TokenVerifier({ publicKeyPem: pairs.slice(0, 8).map(pem).join('') }, () => NOW)
    expect(await verdict(eight, await sign({}, pairs[7]?.privateKey as KeyObject, 'EdDSA'))).toBe('granted')
    expect(() => new TokenVerifier({ publicKeyPem: pairs.map(pem).join('') })).toThrow('at most 8 public keys, got 9')
    const secrets = Array.from({ length: 8 }, (_, i) => new TextEncoder().encode(`previous-secret-${i}-of-at-least-32-bytes`))
    const nine = { secret: SECRET, previousSecrets: secrets }
    expect(() => new TokenVerifier(nine)).toThrow('at most 8 secrets, got 9')
    const withSeven = new TokenVerifier({ secret: SECRET, previousSecrets: secrets.slice(0, 7) }, () => NOW)
    expect(await verdict(withSeven, await sign({}, secrets[6] as Uint8Array))).toBe('granted')
  })

  it('from /dev/token last ttl seconds, 3600 by default, ttl in 1..86400', async () => {
    const relay = await startTestRelay(relays, { devTokens: true })
    const ask = async (ttl?: string): Promise<{ status: number; lasts?: number; error?: string }> => {
      const before = Math.floor(Date.now() / 1000)
      const response = await fetch(`${relay.httpUrl}/dev/token?role=dashboard&rooms=fleet-a/*${ttl === undefined ? '' : `&ttl=${ttl}`}`)
      const body = (await response.json()) as { token?: string; error?: string }
      if (body.token === undefined) return { status: response.status, error: body.error ?? '(no error)' }
      const exp = decodeJwt(body.token).exp ?? 0
      // Issued within this second or the next.
      return { status: response.status, lasts: exp - before - (exp - before > Number(ttl ?? 3600) ? 1 : 0) }
    }
    expect(await ask()).toEqual({ status: 200, lasts: 3600 })
    expect(await ask('1')).toEqual({ status: 200, lasts: 1 })
    expect(await ask('86400')).toEqual({ status: 200, lasts: 86_400 })
    for (const ttl of ['0', '86401', '1.5', 'x', '1e3', '0x10', '', ' 5', '-1']) expect(await ask(ttl), ttl).toEqual({ status: 400, error: 'ttl must be an integer of seconds in 1..86400' })
  })
})

describe('limits', () => {
  it('a room name of 200 characters opens; one of 201 is refused as bad-room', async () => {
    const relay = await startTestRelay(relays)
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const token = await dashboardToken('fleet-r')
    const longest = openRoom(socket, `fleet-r/${'d'.repeat(200 - 'fleet-r/'.length)}`, token)
    const tooLong = openRoom(socket, `fleet-r/${'d'.repeat(201 - 'fleet-r/'.length)}`, token)
    clients.push(longest, tooLong)
    await waitFor(() => longest.synced() && tooLong.denied.length > 0, 'one opened, one refused')
    expect(tooLong.denied).toEqual(['tidemark:bad-room a room name has 1..200 characters'])
  })

  /**
   * `count` updates of the device d1, each an entry after the one before, the first after an
   * entry of another client that is never sent: the relay holds every one of them.
   */
  function heldUpdates(count: number): Uint8Array[] {
    const origin = new Y.Doc()
    replicaLog(origin, 'd1').push([groupEntry('d1-temp', 0)])
    const doc = new Y.Doc()
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(origin))
    const updates: Uint8Array[] = []
    doc.on('update', (update: Uint8Array) => updates.push(update))
    for (let i = 1; i <= count; i++) replicaLog(doc, 'd1').push([groupEntry('d1-temp', i * 60_000)])
    return updates
  }

  /** Sends `updates` raw on a device connection of d1; resolves once `held` of them are held. */
  async function sendHeld(relay: Relay, updates: readonly Uint8Array[], held: number): Promise<RoomClient> {
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const device = openRoom(socket, 'fleet-h/d1', await deviceToken('fleet-h', 'd1'))
    clients.push(device)
    await waitFor(() => device.synced(), 'the device synced')
    for (const update of updates) socket.send(updateFrame('fleet-h/d1', update))
    await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_held_updates')) === held, `${held} updates held`)
    return device
  }

  it('a connection holds at most 1,024 updates waiting for what they depend on; the next is refused as missing-origin', async () => {
    const relay = await startTestRelay(relays, { limits: { updateBurst: 5_000 } })
    const updates = heldUpdates(1_025)
    const device = await sendHeld(relay, updates.slice(0, 1_024), 1_024)
    expect(device.closed).toEqual([])
    const socket = sockets.at(-1) as ReturnType<typeof relaySocket>
    socket.send(updateFrame('fleet-h/d1', updates[1_024] as Uint8Array))
    await waitFor(() => device.closed.length > 0, 'the 1,025th refused')
    expect(device.closed[0]).toMatch(/^tidemark:refused missing-origin /)
  })

  it('a connection holds at most 4 × TIDEMARK_MAX_MESSAGE_BYTES of updates waiting; the one past it is refused as missing-origin', async () => {
    const maxMessageBytes = 1_024
    const relay = await startTestRelay(relays, { limits: { maxMessageBytes } })
    const updates = heldUpdates(200)
    // The first updates whose bytes stay within 4 × maxMessageBytes, and the one that passes it.
    let within = 0
    for (let bytes = 0; within < updates.length && bytes + (updates[within]?.byteLength ?? 0) <= 4 * maxMessageBytes; within++) bytes += updates[within]?.byteLength ?? 0
    expect(within).toBeGreaterThan(1)
    const device = await sendHeld(relay, updates.slice(0, within), within)
    expect(device.closed).toEqual([])
    const socket = sockets.at(-1) as ReturnType<typeof relaySocket>
    socket.send(updateFrame('fleet-h/d1', updates[within] as Uint8Array))
    await waitFor(() => device.closed.length > 0, 'the update past the bytes refused')
    expect(device.closed[0]).toMatch(/^tidemark:refused missing-origin /)
  })
})

describe('TIDEMARK_LOG=info', () => {
  it('also logs rooms not opened, refused updates and compactions, each at info', async () => {
    const lines: [string, string][] = []
    const relay = await startTestRelay(relays, { log: (level, line) => lines.push([level, line]), persistence: { writeWindowMs: 20, compactAfterRows: 1, storeDebounceMs: 20 } })
    const socket = relaySocket(relay.url)
    const strangerSocket = relaySocket(relay.url)
    sockets.push(socket, strangerSocket)
    const stranger = openRoom(strangerSocket, 'fleet-l/d1', await signToken({ sub: 'x', role: 'dashboard', rooms: ['fleet-l/*'] }, { secret: new TextEncoder().encode('another-relays-secret-of-32-bytes-or-more') }))
    const device = openRoom(socket, 'fleet-l/d1', await deviceToken('fleet-l', 'd1'))
    const dashboard = openRoom(relaySocket(relay.url), 'fleet-l/d1', await signToken({ sub: 'ops', role: 'dashboard', rooms: ['fleet-l/*'] }))
    sockets.push(dashboard.provider.configuration.websocketProvider)
    clients.push(stranger, device, dashboard)
    await waitFor(() => stranger.denied.length > 0 && device.synced() && dashboard.synced(), 'the rooms answered')
    // Rows written one at a time: past a row or two (scaled by a factor drawn from the room's name), the room compacts.
    for (let i = 1; i <= 3; i++) {
      replicaLog(device.doc, 'd1').push([groupEntry('d1-temp', i * 60_000)])
      await waitUntil(async () => (await metric(relay.httpUrl, 'tidemark_relay_updates_stored_total')) >= i, `row ${i} written`)
    }
    replicaLog(dashboard.doc, 'dash').push([groupEntry('d1-temp', 0)])
    await waitFor(() => dashboard.closed.length > 0, 'the dashboard refused')
    await waitFor(() => lines.some(([, line]) => line.startsWith('compacted fleet-l/d1: snapshot ')), 'a compaction logged')
    const logged = (start: string): string[] => lines.filter(([, line]) => line.startsWith(start)).map(([level]) => level)
    expect(logged('room not opened: bad-signature')).toEqual(['info'])
    expect(logged('refused ops in fleet-l/d1: read-only')).toEqual(['info'])
    expect(new Set(logged('compacted fleet-l/d1: snapshot '))).toEqual(new Set(['info']))
  })
})

describe('TIDEMARK_LOG=info, for a whole socket closed', () => {
  it('logs each socket refusal at info, with its reason: 4400, 4413 and 1009 alike', async () => {
    const lines: [string, string][] = []
    const relay = await startTestRelay(relays, { log: (level, line) => lines.push([level, line]), limits: { maxMessageBytes: 1_024, maxUnauthenticatedBytes: 2_048 } })
    const unreadable = await rawSocket(relay)
    unreadable.ws.send(Uint8Array.of(0x7f))
    const overBudget = await rawSocket(relay)
    for (let i = 0; i < 8 && overBudget.ws.readyState === WebSocket.OPEN; i++) overBudget.ws.send(messageFrame(`fleet-s/d${i}`, 3, (e) => encoding.writeUint8Array(e, new Uint8Array(512))))
    const tooLarge = await rawSocket(relay)
    tooLarge.ws.send(new Uint8Array(2_048))
    expect((await unreadable.closed).code).toBe(4400)
    expect((await overBudget.closed).code).toBe(4413)
    expect((await tooLarge.closed).code).toBe(1009)
    const closes = (): [string, string][] => lines.filter(([, line]) => line.startsWith('closed a socket')).sort()
    await waitFor(() => closes().length >= 3, 'three lines')
    expect(closes()).toEqual([
      ['info', 'closed a socket: malformed-message'],
      ['info', 'closed a socket: too-large (a message over 1024 bytes)'],
      ['info', 'closed a socket: unauthenticated-limit'],
    ])
  })
})

describe('GET /healthz', () => {
  it('gives up on a store that does not answer its query within 2 s, with the reason it answers 503 with', async () => {
    const sql = await openPglite(freshDataDir())
    let stalled = false
    const stalling: SqlClient = {
      kind: sql.kind,
      query: (text, params) => (stalled ? new Promise<never>(() => undefined) : sql.query(text, params)),
      transaction: (work) => sql.transaction(work),
      close: () => sql.close(),
    }
    const store = await RoomStore.open(stalling, DEFAULT_PERSISTENCE, new RelayMetrics(), () => undefined)
    try {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
      stalled = true
      let outcome: unknown = 'pending'
      const check = store.check().then(
        () => 'answered',
        (error: unknown) => (error as Error).message,
      )
      void check.then((result) => {
        outcome = result
      })
      await vi.advanceTimersByTimeAsync(1_999)
      expect(outcome).toBe('pending')
      await vi.advanceTimersByTimeAsync(1)
      await Promise.resolve()
      expect(outcome).toBe('the store did not answer within 2000 ms')
    } finally {
      vi.useRealTimers()
      stalled = false
      await store.close()
    }
  })
})
