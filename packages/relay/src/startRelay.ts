/**
 * Starts a relay in this process: Hocuspocus' `Hocuspocus` class on the relay's own HTTP server
 * (routes `/healthz`, `/metrics`, `/dev/token`) and its own `ws` server (`maxPayload`, an error
 * listener on every socket: without one, a single invalid-UTF-8 frame ends the process).
 */
import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { Hocuspocus } from '@hocuspocus/server'
import { WebSocketServer } from 'ws'
import { DevTokenIssuer } from './auth/devTokenIssuer.ts'
import { TokenVerifier } from './auth/tokenVerifier.ts'
import { FleetDirectory } from './directory/fleetDirectory.ts'
import { AccessGate } from './gate/accessGate.ts'
import { RoomAdmission } from './gate/roomAdmission.ts'
import { SocketGuard } from './gate/socketGuard.ts'
import { gatherWrites } from './gate/socketWrites.ts'
import { TokenExpiry } from './gate/tokenExpiry.ts'
import { relayHttp } from './http/relayHttp.ts'
import { RelayMetrics } from './metrics/relayMetrics.ts'
import { installProcessBackstop } from './processBackstop.ts'
import { describeError } from './relayLog.ts'
import { GLOBAL_TIMERS, type RelayOptions, resolveRelayOptions } from './relayOptions.ts'
import { IdleRooms } from './rooms/idleRooms.ts'
import { RoomSizes } from './rooms/roomSizes.ts'
import { GuardedRedis } from './scaleout/guardedRedis.ts'
import { openStore } from './store/openStore.ts'
import { sharedDatabaseName } from './store/postgresClient.ts'
import { RelayedUpdates, relayedHoldMs } from './store/relayedUpdates.ts'
import { RoomPersistence } from './store/roomPersistence.ts'
import { UpdateFanOut } from './rooms/updateFanOut.ts'
import { RoomStore } from './store/roomStore.ts'
import type { SqlClient } from './store/sqlClient.ts'

/**
 * A running relay.
 *
 * @example
 * const relay = await startRelay({ port: 0, auth: { secret } })
 * console.log(relay.url) // ws://127.0.0.1:41234
 * await relay.close()
 */
export interface Relay {
  /** WebSocket URL clients connect to. */
  readonly url: string
  /** HTTP base URL of `/healthz`, `/metrics` and `/dev/token`. */
  readonly httpUrl: string
  readonly host: string
  readonly port: number
  /**
   * Stops accepting connections, closes every room connection with the reason
   * `tidemark:shutdown`, writes every accepted update to the store and closes it. Rejects
   * (after closing everything) when updates could not be stored.
   */
  close(): Promise<void>
}

/** Longest a closing socket is waited for before it is cut. */
const SOCKET_CLOSE_MS = 1000

/**
 * Longest the shutdown waits for the store (its last writes, compactions, closing): a store that
 * stopped answering must not hold the process forever. What is not stored by then is reported.
 */
export const STORE_SHUTDOWN_MS = 30_000

/**
 * Starts a relay (see `RelayOptions`); resolves once it listens.
 *
 * @example
 * import { startRelay } from '@tidemark/relay'
 *
 * const relay = await startRelay({
 *   port: 0,
 *   store: { dataDir: '/var/lib/tidemark-relay' },
 *   auth: { secret: new TextEncoder().encode(process.env.TIDEMARK_AUTH_SECRET) },
 * })
 * // devices and dashboards connect to relay.url; Prometheus scrapes `${relay.httpUrl}/metrics`
 * process.on('SIGTERM', () => relay.close().then(() => process.exit(0)))
 */
export async function startRelay(options: RelayOptions): Promise<Relay> {
  const o = resolveRelayOptions(options)
  const verifier = new TokenVerifier(o.auth, o.now)
  const { log } = o
  const metrics = new RelayMetrics()
  const uninstallBackstop = o.guardProcess ? installProcessBackstop(metrics, log) : () => undefined

  let sql: SqlClient
  try {
    sql = await openStore(o.store, log)
  } catch (error) {
    uninstallBackstop()
    throw error
  }
  let store: RoomStore
  try {
    store = await RoomStore.open(sql, o.persistence, metrics, log, o.timers)
  } catch (error) {
    await sql.close().catch(() => undefined)
    uninstallBackstop()
    throw new Error(`the store's tables could not be created: ${describeError(error)}`, { cause: error })
  }
  const stopWatchingLoop = metrics.watchEventLoop()

  const sizes = new RoomSizes(o.limits.maxRoomBytes)
  const idle = new IdleRooms(o.limits.idleRoomMs, o.now, o.timers, log)
  const expiry = new TokenExpiry(o.now, o.timers)
  const admission = new RoomAdmission(o.limits, idle)
  const gate = new AccessGate({
    verifier,
    metrics,
    limits: { ...o.limits, maxHeldBytes: 4 * o.limits.maxMessageBytes, maxAssemblingBytes: 4 * o.limits.maxRoomBytes },
    sizes,
    admission,
    log,
    now: o.now,
    expiry,
  })
  const redis = o.redisUrl === undefined ? undefined : new GuardedRedis(o.redisUrl, metrics, log, { timers: o.timers, maxUnansweredBytes: 4 * o.limits.maxRoomBytes })
  // Another relay's store is this one's only when both are on one PostgreSQL database: a PGlite
  // data directory is never shared, so its relay writes every change that reaches it.
  const database = redis === undefined || sql.kind === 'pglite' ? null : await sharedDatabaseName(sql)
  if (redis !== undefined && sql.kind === 'postgres' && database === null) {
    log('warn', 'PostgreSQL does not tell its system identifier (pg_control_system()): this relay writes every change the other relays send it, as they write its own')
  }
  const relayed = database === null ? undefined : new RelayedUpdates(store, { holdMs: relayedHoldMs(o.persistence.writeWindowMs), now: o.now, timers: o.timers, metrics })
  if (relayed !== undefined && database !== null) redis?.storeMarks(store, relayed, database)
  const persistence = new RoomPersistence({
    store,
    sizes,
    idle,
    metrics,
    log,
    ...(relayed === undefined ? {} : { relayed }),
    // A store of this relay alone keeps the other relays' updates as copies, written merged (relayedCopies.ts).
    ...(redis !== undefined && sql.kind === 'pglite' ? { copiesOrigin: redis.remoteOrigin } : {}),
  })
  const fanOut = new UpdateFanOut(log, redis?.remoteOrigin, metrics)
  redis?.sharePresence(gate.presence)
  const hocuspocus = new Hocuspocus({
    name: 'tidemark-relay',
    quiet: true,
    debounce: o.persistence.storeDebounceMs,
    maxDebounce: o.persistence.storeMaxDebounceMs,
    extensions: redis === undefined ? [gate, fanOut, persistence] : [gate, fanOut, persistence, redis],
  })
  idle.attach(hocuspocus)
  admission.attach(hocuspocus)
  const directory = new FleetDirectory(hocuspocus, o.now, log, { maxRooms: o.limits.maxRooms, idle })
  persistence.attachDirectory(directory)

  const wss = new WebSocketServer({ noServer: true, maxPayload: o.limits.maxMessageBytes, perMessageDeflate: false })
  wss.on('error', (error) => log('warn', `WebSocket server: ${describeError(error)}`))
  const devTokens = o.devTokens && 'secret' in o.auth ? new DevTokenIssuer(o.auth.secret) : undefined
  let shutdown: Promise<void> | undefined

  const server = http.createServer(
    relayHttp({
      metrics,
      devTokens,
      checkStore: () => store.check(),
      closing: () => shutdown !== undefined,
      gauges: async () => ({
        connections: wss.clients.size,
        roomsLoaded: hocuspocus.documents.size,
        storedBytes: await store.storedBytes().catch(() => null),
        pendingBytes: store.pendingBytes,
        heldUpdates: gate.heldUpdates,
        mostRoomsHeldBySubject: admission.mostHeldBySubject,
        assemblingBytes: gate.assemblingBytes,
        unsharedRooms: redis?.unsharedRooms ?? 0,
        redisUnansweredBytes: redis?.unansweredBytes ?? 0,
        relayedHeldBytes: relayed?.bytes ?? 0,
      }),
    }),
  )
  server.on('upgrade', (request, socket, head) => {
    socket.on('error', () => {
      metrics.socketErrors++
    })
    if (shutdown !== undefined) {
      socket.destroy()
      return
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      ws.on('error', (error: Error & { code?: string }) => {
        metrics.socketErrors++
        if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') {
          metrics.refused('too-large')
          log('info', `closed a socket: too-large (a message over ${o.limits.maxMessageBytes} bytes)`)
        }
      })
      // The frames sent to the socket in one turn (the changes one read of Redis brought its rooms) leave in one write.
      gatherWrites(ws, socket as Socket)
      const guard = new SocketGuard(ws, { ...o.limits, pingTimeoutMs: hocuspocus.configuration.timeout }, metrics, o.timers, log, socket as Socket, GLOBAL_TIMERS)
      guard.install()
      hocuspocus.handleConnection(ws, request, { socket: guard })
    })
  })

  const closeAll = async (): Promise<void> => {
    // First, before any connection closes: every message still queued in Hocuspocus is dropped
    // (its client, not acknowledged, sends it again to the next relay) rather than applied after
    // the last write below.
    gate.closing()
    persistence.closing()
    idle.close()
    expiry.close()
    const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()))
    let connections = 0
    for (const document of hocuspocus.documents.values()) {
      for (const connection of document.getConnections()) {
        connections++
        connection.close({ code: 1001, reason: 'tidemark:shutdown' })
      }
    }
    log('info', `shutting down: closing ${wss.clients.size} sockets and ${connections} room connections in ${hocuspocus.documents.size} rooms with 1001 tidemark:shutdown`)
    const socketsClosed = Promise.all(
      [...wss.clients].map(
        (ws) =>
          new Promise<void>((resolve) => {
            ws.once('close', () => resolve())
            ws.close(1001, 'tidemark:shutdown')
          }),
      ),
    )
    const failures: unknown[] = []
    // Every wait on the store below ends at one deadline; past it, the work goes on in the
    // background and what it has not stored is reported.
    let deadline: unknown
    const late = new Promise<'late'>((resolve) => {
      deadline = o.timers.setTimeout(() => resolve('late'), STORE_SHUTDOWN_MS)
    })
    let lateSeen = false
    /** True when `work` ended (its failure recorded), false when the deadline passed first. */
    const beforeDeadline = async (what: string, work: () => Promise<unknown>): Promise<boolean> => {
      const outcome = await Promise.race([
        work().then(
          () => 'done' as const,
          (error: unknown) => {
            failures.push(error)
            return 'failed' as const
          },
        ),
        late,
      ])
      if (outcome !== 'late') return true
      if (!lateSeen) failures.push(new Error(`the store did not finish ${what} within ${STORE_SHUTDOWN_MS} ms`))
      lateSeen = true
      return false
    }
    await beforeDeadline('listing rooms in their directories', () => directory.close())
    await beforeDeadline('writing', () => store.flush())
    // Hocuspocus' debounced store timers would otherwise outlive the relay.
    await beforeDeadline('compacting', () => Promise.allSettled([...hocuspocus.documents.keys()].map((name) => hocuspocus.debouncer.executeNow(`onStoreDocument-${name}`))))
    await beforeDeadline('leaving Redis', async () => redis?.onDestroy())
    for (const document of hocuspocus.documents.values()) document.destroy()
    hocuspocus.documents.clear()
    // Whatever was queued while the first write ran (a held update, a directory listing) is
    // written now that no document can change any more.
    await beforeDeadline('writing', () => store.flush())
    let cut: ReturnType<typeof setTimeout> | undefined
    await Promise.race([socketsClosed, new Promise<void>((resolve) => (cut = setTimeout(resolve, SOCKET_CLOSE_MS)))])
    clearTimeout(cut)
    for (const ws of wss.clients) ws.terminate()
    wss.close()
    server.closeAllConnections()
    await serverClosed
    const failedBefore = failures.length
    const closed = await beforeDeadline('closing', () => store.close())
    o.timers.clearTimeout(deadline)
    const closeFailure = closed ? failures.splice(failedBefore)[0] : failures.at(-1)
    // Counted once the store closed (it waits for a write under way) or the deadline passed:
    // anything queued or still being written is lost, whatever the cause.
    const unstored = store.unstoredBytes
    uninstallBackstop()
    stopWatchingLoop()
    if (unstored > 0) {
      const reason = failures.length > 0 ? describeError(failures.at(-1)) : 'they were queued after the last write'
      throw new Error(`the relay closed, but ${unstored} bytes of accepted updates could not be stored: ${reason}`, { cause: failures.at(-1) })
    }
    // A write that failed once and then succeeded lost nothing, but is worth knowing about.
    for (const error of failures) log('warn', `a shutdown write failed and was retried: ${describeError(error)}`)
    if (closeFailure === undefined) log('info', 'shut down: every accepted update stored')
    if (closeFailure !== undefined) throw new Error(`the relay stored every update but its store did not close: ${describeError(closeFailure)}`, { cause: closeFailure })
  }

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(o.port, o.host, () => {
        server.off('error', reject)
        resolve()
      })
    })
  } catch (error) {
    shutdown = Promise.resolve()
    await redis?.onDestroy()
    await store.close().catch(() => undefined)
    uninstallBackstop()
    stopWatchingLoop()
    throw new Error(`could not listen on ${o.host}:${o.port}: ${describeError(error)}`, { cause: error })
  }
  server.on('error', (error) => log('error', `HTTP server: ${describeError(error)}`))
  const port = (server.address() as AddressInfo).port
  const urlHost = o.host === '0.0.0.0' ? '127.0.0.1' : o.host === '::' ? '[::1]' : o.host.includes(':') ? `[${o.host}]` : o.host
  return {
    url: `ws://${urlHost}:${port}`,
    httpUrl: `http://${urlHost}:${port}`,
    host: o.host,
    port,
    close() {
      shutdown ??= closeAll()
      return shutdown
    },
  }
}
