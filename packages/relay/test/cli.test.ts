/**
 * The `tidemark-relay` command: configuration errors (exit 2, naming the variable), the ready
 * line, the HTTP routes, dev tokens, public-key tokens, and a clean stop on SIGINT.
 */
import { generateKeyPairSync } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { createServer, get } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { SignJWT } from 'jose'
import { afterAll, describe, expect, it } from 'vitest'
import { freshDataDir, removeDataDirs, tempDir } from './support/dataDirs.ts'
import { killRelays, runRelayToExit, spawnRelay } from './support/relayProcess.ts'
import { groupEntry, openRoom, relaySocket, replicaLog, SECRET_TEXT, waitFor } from './support/roomClients.ts'

const sockets: ReturnType<typeof relaySocket>[] = []

afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await killRelays()
  removeDataDirs()
})

describe('bad configuration exits 2 with a message naming the variable', () => {
  it.each([
    ['no key at all', {}, 'TIDEMARK_AUTH_SECRET: set TIDEMARK_AUTH_SECRET (HS256) or TIDEMARK_AUTH_PUBLIC_KEY (a PEM file path), or TIDEMARK_DEV_TOKENS=1 for local development'],
    ['a short secret', { TIDEMARK_AUTH_SECRET: 'short' }, 'TIDEMARK_AUTH_SECRET: must be at least 32 bytes, got 5'],
    ['a port out of range', { TIDEMARK_AUTH_SECRET: SECRET_TEXT, PORT: '70000' }, 'PORT: must be an integer in 0..65535, got "70000"'],
    ['dev tokens on a public address', { TIDEMARK_DEV_TOKENS: '1', HOST: '0.0.0.0' }, 'TIDEMARK_DEV_TOKENS: dev tokens are served only on a loopback HOST (127.0.0.1, ::1, localhost), not 0.0.0.0'],
    ['a Redis URL of another scheme', { TIDEMARK_AUTH_SECRET: SECRET_TEXT, REDIS_URL: 'http://127.0.0.1:6379' }, 'REDIS_URL: must be a redis://host:port URL'],
    ['a database URL of another scheme', { TIDEMARK_AUTH_SECRET: SECRET_TEXT, DATABASE_URL: 'mysql://db' }, 'DATABASE_URL: must be a postgres:// or postgresql:// URL'],
    ['a limit that is not a number', { TIDEMARK_AUTH_SECRET: SECRET_TEXT, TIDEMARK_MAX_ROOMS: 'lots' }, 'TIDEMARK_MAX_ROOMS: must be an integer in 1..9007199254740991, got "lots"'],
    ['rooms per subject past the rooms loaded', { TIDEMARK_AUTH_SECRET: SECRET_TEXT, TIDEMARK_MAX_ROOMS: '100', TIDEMARK_MAX_ROOMS_PER_SUBJECT: '101' }, 'TIDEMARK_MAX_ROOMS_PER_SUBJECT: must be at most TIDEMARK_MAX_ROOMS (100), got 101'],
    ['rooms per subject past the default rooms loaded', { TIDEMARK_AUTH_SECRET: SECRET_TEXT, TIDEMARK_MAX_ROOMS_PER_SUBJECT: '10001' }, 'TIDEMARK_MAX_ROOMS_PER_SUBJECT: must be at most TIDEMARK_MAX_ROOMS (10000), got 10001'],
    ['no rooms per subject', { TIDEMARK_AUTH_SECRET: SECRET_TEXT, TIDEMARK_MAX_ROOMS_PER_SUBJECT: '0' }, 'TIDEMARK_MAX_ROOMS_PER_SUBJECT: must be an integer in 1..9007199254740991, got "0"'],
    ['a time limit past what a timer holds', { TIDEMARK_AUTH_SECRET: SECRET_TEXT, TIDEMARK_AUTH_TIMEOUT_MS: '3000000000' }, 'TIDEMARK_AUTH_TIMEOUT_MS: must be an integer in 1..2147483647, got "3000000000"'],
    ['a write window past what a timer holds', { TIDEMARK_AUTH_SECRET: SECRET_TEXT, TIDEMARK_STORE_DEBOUNCE_MS: '2147483648' }, 'TIDEMARK_STORE_DEBOUNCE_MS: must be an integer in 1..2147483647, got "2147483648"'],
    ['a missing public key file', { TIDEMARK_AUTH_PUBLIC_KEY: '/nonexistent/key.pem' }, "TIDEMARK_AUTH_PUBLIC_KEY: cannot read /nonexistent/key.pem: ENOENT: no such file or directory, open '/nonexistent/key.pem'"],
  ] as const)('%s', async (_, env, message) => {
    const result = await runRelayToExit({ TIDEMARK_DATA_DIR: tempDir('unused'), ...env })
    expect(result.code).toBe(2)
    expect(result.stderr).toBe(`tidemark-relay: bad configuration: ${message}\n`)
    expect(result.stdout).toBe('')
  })
})

describe('a relay that cannot start exits 1, naming why', () => {
  it('its port taken', async () => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const { port } = taken.address() as AddressInfo
    try {
      const result = await runRelayToExit({ TIDEMARK_DATA_DIR: freshDataDir(), TIDEMARK_AUTH_SECRET: SECRET_TEXT, PORT: String(port) })
      expect(result.code).toBe(1)
      expect(result.stderr).toMatch(new RegExp(`^tidemark-relay: could not start: could not listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`))
      expect(result.stdout).toBe('')
    } finally {
      await new Promise((resolve) => taken.close(resolve))
    }
  })

  it('its data directory in use by another relay (the store opens while the relay loads)', async () => {
    const dataDir = freshDataDir()
    const holder = await spawnRelay({ TIDEMARK_DATA_DIR: dataDir, TIDEMARK_AUTH_SECRET: SECRET_TEXT })
    const result = await runRelayToExit({ TIDEMARK_DATA_DIR: dataDir, TIDEMARK_AUTH_SECRET: SECRET_TEXT })
    expect(result.code).toBe(1)
    expect(result.stderr).toBe(
      `tidemark-relay: could not start: the store could not be opened: the data directory ${dataDir} is in use by process ${holder.pid} (lock file ${dataDir}.lock); one relay at a time opens it. If no relay runs there, delete the lock file\n`,
    )
    expect(result.stdout).toBe('')
  })

  it('its database unreachable', async () => {
    // A port nothing listens on: bound, then closed again.
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const { port } = probe.address() as AddressInfo
    await new Promise((resolve) => probe.close(resolve))
    const result = await runRelayToExit({ TIDEMARK_AUTH_SECRET: SECRET_TEXT, DATABASE_URL: `postgres://relay@127.0.0.1:${port}/tidemark` })
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/^tidemark-relay: could not start: .*ECONNREFUSED/)
    expect(result.stdout).toBe('')
  })
})

describe('a private key where the public key goes', () => {
  it('is refused: exit 2, and the relay does not keep the signing key', async () => {
    const { privateKey } = generateKeyPairSync('ed25519')
    const keyFile = join(tempDir('key'), 'private.pem')
    writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }))
    const result = await runRelayToExit({ TIDEMARK_DATA_DIR: tempDir('unused'), TIDEMARK_AUTH_PUBLIC_KEY: keyFile })
    expect(result.code).toBe(2)
    expect(result.stderr).toBe(
      'tidemark-relay: bad configuration: TIDEMARK_AUTH_PUBLIC_KEY: this PEM is a private key; give the relay the public key alone (openssl pkey -in private.pem -pubout -out public.pem)\n',
    )
    expect(result.stdout).toBe('')
  })
})

describe('a running relay', () => {
  it('prints one ready line, serves /healthz, /metrics and dev tokens, and stops cleanly on SIGINT', async () => {
    const relay = await spawnRelay({ TIDEMARK_DATA_DIR: freshDataDir(), TIDEMARK_DEV_TOKENS: '1' })
    expect(relay.stdout()).toBe(`tidemark-relay ready ${JSON.stringify({ host: '127.0.0.1', port: relay.port, pid: relay.pid })}\n`)
    const health = await fetch(`${relay.httpUrl}/healthz`)
    expect([health.status, await health.text()]).toEqual([200, 'ok\n'])
    expect((await fetch(`${relay.httpUrl}/nothing`)).status).toBe(404)

    const token = async (query: string): Promise<string> => {
      const response = await fetch(`${relay.httpUrl}/dev/token?${query}`)
      expect(response.status).toBe(200)
      return ((await response.json()) as { token: string }).token
    }
    const bad = await fetch(`${relay.httpUrl}/dev/token?role=device&room=fleet-d/d1`)
    expect([bad.status, await bad.json()]).toEqual([400, { error: 'replica is required' }])
    // A token the relay would refuse is not issued: the reason comes back instead.
    const refusedWith = async (query: string): Promise<unknown> => {
      const response = await fetch(`${relay.httpUrl}/dev/token?${query}`)
      return [response.status, ((await response.json()) as { error?: string }).error]
    }
    expect(await refusedWith('role=device&room=fleet-d&replica=d1&source=d1-temp')).toEqual([400, 'room "fleet-d": a room is <fleet>/<device>'])
    expect(await refusedWith('role=device&room=fleet-d/_x&replica=d1&source=d1-temp')).toEqual([400, 'room "fleet-d/_x": segment "_x" is reserved'])
    expect(await refusedWith('role=device&room=fleet-d/d1&replica=d1&source=*')).toEqual([400, 'sources: a pattern needs a prefix before "*"'])
    expect(await refusedWith('role=dashboard&rooms=fleet-d')).toEqual([400, 'room "fleet-d": a room is <fleet>/<device>'])
    // Asked under another name (a website whose name resolves to this machine): refused, whatever its origin says.
    const underName = (host: string): Promise<number | undefined> =>
      new Promise((resolve, reject) => {
        get(`${relay.httpUrl}/dev/token?role=dashboard&rooms=fleet-d/*`, { headers: { host, origin: `http://${host}` } }, (response) => {
          response.resume()
          resolve(response.statusCode)
        }).on('error', reject)
      })
    expect(await underName(`evil.example:${relay.port}`)).toBe(403)
    // A request target no URL parses is the client's error: 400, and the relay serves on.
    const badTarget = await new Promise<number | undefined>((resolve, reject) => {
      get({ host: '127.0.0.1', port: relay.port, path: 'http://[/' }, (response) => {
        response.resume()
        resolve(response.statusCode)
      }).on('error', reject)
    })
    expect(badTarget).toBe(400)
    expect(await underName(`127.0.0.1.evil.example:${relay.port}`)).toBe(403)
    // Any spelling of this machine's names: case, a full IPv6 loopback, a default port left out or given.
    for (const host of [`localhost:${relay.port}`, `LOCALHOST:${relay.port}`, `[0:0:0:0:0:0:0:1]:${relay.port}`, '127.0.0.1', '127.0.0.1:80']) expect(await underName(host), host).toBe(200)
    // A page served from this machine on another port may read the tokens (CORS), also with a fetch that sends credentials
    // (`credentials: 'include'`, as a token URL of the app's own login does); a page of any other origin may not.
    const allowedFrom = async (origin: string): Promise<string | null> => {
      const { headers } = await fetch(`${relay.httpUrl}/dev/token?role=dashboard&rooms=fleet-d/*`, { headers: { origin } })
      const allowed = headers.get('access-control-allow-origin')
      expect(headers.get('access-control-allow-credentials'), origin).toBe(allowed === null ? null : 'true')
      return allowed
    }
    expect(await allowedFrom('http://127.0.0.1:5173')).toBe('http://127.0.0.1:5173')
    expect(await allowedFrom('http://localhost:4183')).toBe('http://localhost:4183')
    expect(await allowedFrom('http://[::1]:8080')).toBe('http://[::1]:8080')
    expect(await allowedFrom('https://relay-demo.example.com')).toBeNull()
    expect(await allowedFrom('http://127.0.0.1.example.com')).toBeNull()
    expect(await allowedFrom('null')).toBeNull()
    const socket = relaySocket(relay.url)
    const dashboardSocket = relaySocket(relay.url)
    sockets.push(socket, dashboardSocket)
    const device = openRoom(socket, 'fleet-d/d1', await token('role=device&room=fleet-d/d1&replica=d1&source=d1-temp'))
    const dashboard = openRoom(dashboardSocket, 'fleet-d/d1', await token('role=dashboard&rooms=fleet-d/*'))
    await waitFor(() => device.synced() && dashboard.synced(), 'synced with dev tokens')
    replicaLog(device.doc, 'd1').push([groupEntry('d1-temp', 0)])
    await waitFor(() => replicaLog(dashboard.doc, 'd1').length === 1, 'the dashboard got the entry')

    const metrics = await (await fetch(`${relay.httpUrl}/metrics`)).text()
    for (const name of [
      'tidemark_relay_connections',
      'tidemark_relay_rooms_loaded',
      'tidemark_relay_updates_in_total',
      'tidemark_relay_updates_out_total',
      'tidemark_relay_refusals_total',
      'tidemark_relay_store_seconds',
      'tidemark_relay_stored_bytes',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_array_buffers_bytes',
      'nodejs_active_resources',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_eventloop_lag_max_seconds',
    ]) {
      expect(metrics).toMatch(new RegExp(`^# TYPE ${name} (counter|gauge|summary)$`, 'm'))
    }
    expect(metrics).toMatch(/^tidemark_relay_updates_in_total 1$/m)
    expect(metrics).toMatch(/^tidemark_relay_store_seconds_count\{op="load"\} [1-9]/m)
    // The listening server is an active resource: the relay's event loop is counted by type.
    expect(metrics).toMatch(/^nodejs_active_resources\{type="TCPServerWrap"\} [1-9]/m)
    // The loop is sampled every 10 ms from the start, so by now the delay is a finite number.
    expect(metrics).toMatch(/^nodejs_eventloop_lag_max_seconds \d+(\.\d+)?(e-?\d+)?$/m)

    device.destroy()
    dashboard.destroy()
    socket.destroy()
    dashboardSocket.destroy()
    expect(await relay.stop('SIGINT')).toEqual({ code: 0, signal: null })
    expect(relay.stderr()).toBe('tidemark-relay: SIGINT: storing rooms and closing\n')
  })

  it('verifies tokens with a public key (ES256) given as a PEM file', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const keyFile = join(tempDir('key'), 'relay.pem')
    writeFileSync(keyFile, publicKey.export({ type: 'spki', format: 'pem' }))
    const relay = await spawnRelay({ TIDEMARK_DATA_DIR: freshDataDir(), TIDEMARK_AUTH_PUBLIC_KEY: keyFile })
    const sign = (claims: Record<string, unknown>, alg: string, key: Parameters<SignJWT['sign']>[0]): Promise<string> =>
      new SignJWT(claims).setProtectedHeader({ alg }).setExpirationTime('1h').sign(key)
    const socket = relaySocket(relay.url)
    sockets.push(socket)
    const good = openRoom(socket, 'fleet-e/d1', await sign({ sub: 'ops', role: 'dashboard', rooms: ['fleet-e/*'] }, 'ES256', privateKey))
    const forged = openRoom(socket, 'fleet-e/d2', await sign({ sub: 'ops', role: 'dashboard', rooms: ['fleet-e/*'] }, 'HS256', new TextEncoder().encode(SECRET_TEXT)))
    await waitFor(() => good.synced() && forged.denied.length > 0, 'one accepted, one refused')
    expect(forged.denied).toEqual(['tidemark:bad-signature'])
    good.destroy()
    forged.destroy()
  })
})
