/**
 * The whole path of a reading under chaos, seeded: device engines from `openEngine` (a
 * write-ahead log in fake IndexedDB) bound to their docs and rooms with `connectRelay`, a real
 * relay on its PGlite store, a dashboard (its own log too) following the fleet's directory. At
 * random points a device crashes (its unfinished IndexedDB transactions aborted, its sockets cut,
 * its engine and log handle abandoned unclosed; reopened from the same IndexedDB factory), right
 * after an ingest or again while it reopens; goes offline or online; closes and reopens; the
 * dashboard crashes or reloads; the relay restarts on its store and port (in this process by its
 * handle, or as a process by its PID, SIGTERM or SIGKILL). At the end, everything back and in
 * sync, each device's engine and the dashboard show exactly what one engine that saw each
 * accepted reading once shows: nothing acknowledged is lost, nothing counts twice.
 *
 * Replay a seed: TIDEMARK_SEED=<seed> TIDEMARK_CHAOS_RELAY=<in-process|process> npx vitest run --project relay packages/relay/test/deviceChaos.test.ts
 * More seeds: TIDEMARK_CHAOS_SEEDS=<n> (n seeds from TIDEMARK_SEED, default 1); longer runs: TIDEMARK_CHAOS_STEPS=<steps> (default 60).
 */
import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { createEngine, type Engine, type EngineOptions, type TidemarkEngine } from '@tidemark/engine'
import { indexedDbPersistence, openEngine } from '@tidemark/idb'
import { seededRandom } from '@tidemark/seeded-random'
import { connectRelay, followRooms, type Relay as RelayClient, type RoomFollower } from '@tidemark/yjs'
import { startRelay } from '../src/index.ts'
import { ChaosDevice, type ChaosProfile, chaosOptions, crashableIndexedDb, JITTER, type ProducerMode } from './support/chaosDevice.ts'
import { freshDataDir, removeDataDirs } from './support/dataDirs.ts'
import { killRelays, spawnRelay } from './support/relayProcess.ts'
import { SECRET, SECRET_TEXT, signToken } from './support/roomClients.ts'

const FILE = 'packages/relay/test/deviceChaos.test.ts'
/** Each fixed seed with the relay in this process (stopped by its handle) or as a process (stopped by its PID, SIGTERM or SIGKILL). */
const FIXED: readonly (readonly [number, RelayKind])[] = [
  [1, 'in-process'],
  [2, 'in-process'],
  [3, 'process'],
]
type RelayKind = 'in-process' | 'process'
const KIND = (process.env.TIDEMARK_CHAOS_RELAY ?? 'in-process') as RelayKind
const RUNS = Number(process.env.TIDEMARK_CHAOS_SEEDS ?? 0)
const FIRST = Number(process.env.TIDEMARK_SEED ?? 1)
const cases: readonly (readonly [number, RelayKind])[] =
  process.env.TIDEMARK_SEED === undefined && RUNS === 0 ? FIXED : Array.from({ length: Math.max(RUNS, 1) }, (_, i) => [FIRST + i, KIND] as const)
const DEVICES = 3
const STEPS = Number(process.env.TIDEMARK_CHAOS_STEPS ?? 60)
/** Processing time of the engines: a fake clock, one second per step. */
const T0_CLOCK = 1_700_000_000_000

const cleanups: (() => Promise<void> | void)[] = []

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

afterAll(() => removeDataDirs())

function values(engine: Engine) {
  // With the aggregates' results (the options configure them; the engine's type does not say so).
  return engine.results().map((result) => {
    const { window, key, start, end, count, sum, min, max } = result
    return { window, key, start, end, count, sum, min, max, aggregates: (result as { aggregates?: unknown }).aggregates }
  })
}

/** Polls `check` every 10 ms of real time (the relay's traffic is real) until it holds; throws naming `what` after `ms`. */
async function until(check: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`never happened within ${ms} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Lets commits, socket traffic and relay work interleave with the next step (not a wait for any outcome). */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** A relay on one store and port, restarted at will: in this process (stopped by its handle) or a process (by its PID). */
interface ChaosRelay {
  readonly url: string
  /** Stops it: `kill` is SIGKILL for a process (what its write window held is lost), else a clean stop. */
  stop(kill: boolean): Promise<void>
  start(): Promise<void>
}

async function chaosRelay(kind: RelayKind, dataDir: string): Promise<ChaosRelay> {
  if (kind === 'in-process') {
    const options = { host: '127.0.0.1', store: { dataDir }, auth: { secret: SECRET }, persistence: { writeWindowMs: 20 }, log: () => undefined }
    let relay: Awaited<ReturnType<typeof startRelay>> | null = await startRelay({ ...options, port: 0 })
    const port = relay.port
    const url = relay.url
    cleanups.push(async () => {
      await relay?.close().catch(() => undefined)
    })
    return {
      url,
      async stop() {
        const stopping = relay
        relay = null
        await stopping?.close()
      },
      async start() {
        relay = await startRelay({ ...options, port })
      },
    }
  }
  // A write window of 200 ms: a SIGKILL loses what the relay acknowledged within it.
  const env = { TIDEMARK_DATA_DIR: dataDir, TIDEMARK_AUTH_SECRET: SECRET_TEXT, TIDEMARK_STORE_DEBOUNCE_MS: '200' }
  let child = await spawnRelay(env)
  const port = child.port
  cleanups.push(() => killRelays())
  return {
    url: child.url,
    async stop(kill) {
      await child.stop(kill ? 'SIGKILL' : 'SIGTERM')
    },
    async start() {
      child = await spawnRelay({ ...env, PORT: String(port) })
    },
  }
}

/** The dashboard: an engine over its own write-ahead log, following the fleet; it reloads, or crashes and reopens. */
class ChaosDashboard {
  readonly #factory = new IDBFactory()
  #claim = { held: true }
  #disk = crashableIndexedDb(this.#factory)
  engine: TidemarkEngine | null = null
  client: RelayClient | null = null
  follower: RoomFollower | null = null
  readonly #setup: { url: string; fleet: string; options: EngineOptions; now: () => number }

  constructor(setup: { url: string; fleet: string; options: EngineOptions; now: () => number }) {
    this.#setup = setup
  }

  async open(): Promise<void> {
    const { url, fleet, options, now } = this.#setup
    this.#claim = { held: true }
    this.#disk = crashableIndexedDb(this.#factory)
    const persistence = indexedDbPersistence({ name: 'dashboard', indexedDB: this.#disk.indexedDB, claim: this.#claim })
    const engine = (await openEngine({ ...options, replicaId: 'ops', persistence, now, checkpointEvery: { events: 40 } })) as TidemarkEngine
    const client = connectRelay({ url, token: () => signToken({ sub: 'ops', role: 'dashboard', rooms: [`${fleet}/*`] }), WebSocket, jitter: JITTER, onError: () => undefined })
    this.follower = followRooms(engine, client, { directory: `${fleet}/_directory` })
    this.engine = engine
    this.client = client
  }

  /** Its page dies: the socket goes, the engine and its log are abandoned. */
  crash(): void {
    this.#claim.held = false
    this.#disk.crash()
    this.client?.destroy()
    this.engine = null
  }

  async close(): Promise<void> {
    this.follower?.destroy()
    this.client?.destroy()
    await this.engine?.close()
  }
}

async function run(seed: number, kind: RelayKind): Promise<string> {
  const rand = seededRandom(seed)
  const pick = (n: number): number => Math.floor(rand() * n)
  const jitter = seededRandom(seed ^ 0x5eed)
  const tsJitter = new Map<number, number>()
  const readingRand = (seq: number): number => {
    let value = tsJitter.get(seq)
    if (value === undefined) {
      value = jitter()
      tsJitter.set(seq, value)
    }
    return value
  }
  const profile: ChaosProfile = seed % 2 === 0 ? 'manual' : 'event-time'
  const options = chaosOptions(profile)
  const fleet = `chaos-${seed}`
  const errors: string[] = []
  const log: string[] = []
  const clock = { now: T0_CLOCK }
  const now = (): number => clock.now
  const relay = await chaosRelay(kind, freshDataDir())
  const checkpointEvents = 3 + pick(30)
  // Few keys, or enough that a group's entries are rewritten as deltas pile up.
  const KEYS = rand() < 0.5 ? 4 : 40
  const mode: ProducerMode = rand() < 0.5 ? 'resend' : 'resume'
  const cutOffline = rand() < 0.5
  const devices = Array.from({ length: DEVICES }, (_, i) => new ChaosDevice(`c${i}`, fleet, { url: () => relay.url, now, errors, rand: readingRand, options, checkpointEvents, mode, cutOffline }))
  cleanups.push(async () => {
    for (const device of devices) await device.close().catch(() => undefined)
  })
  for (const device of devices) await device.open()
  const dashboard = new ChaosDashboard({ url: relay.url, fleet, options, now })
  cleanups.push(() => dashboard.close())
  await dashboard.open()

  for (let step = 0; step < STEPS; step++) {
    clock.now += 1000
    // Processing time moves on: sources turn idle, and a tick that changes something is logged.
    for (const d of devices) d.engine?.tick()
    dashboard.engine?.tick()
    const device = devices[pick(DEVICES)] as ChaosDevice
    const action = rand()
    if (action < 0.5) {
      if (device.running) device.produce(1 + pick(6), KEYS)
      if (device.running && rand() < 0.2) {
        // Dies right after ingesting, or a few turns later: that batch's commit has not started,
        // or is under way (aborted by the crash) while its writes may already be on the socket.
        const turns = pick(4)
        for (let i = 0; i < turns; i++) await turn()
        log.push(`${step}: ${device.id} crashes ${turns} turns after an ingest`)
        device.crash()
      }
    } else if (action < 0.6) {
      log.push(`${step}: ${device.id} crashes`)
      device.crash()
      if (rand() < 0.2) {
        const turns = pick(8)
        log.push(`${step}: ${device.id} crashes again ${turns} turns into its reload`)
        await device.crashWhileOpening(turns)
      }
      if (rand() < 0.6) {
        // Reopened at once (a reload), or later (a closed tab opened again).
        log.push(`${step}: ${device.id} reopens`)
        await device.open()
      }
    } else if (action < 0.64) {
      if (device.running) {
        log.push(`${step}: ${device.id} closes, reopens`)
        await device.close()
        await device.open()
      }
    } else if (action < 0.68) {
      if (!device.running) {
        log.push(`${step}: ${device.id} reopens`)
        await device.open()
      }
    } else if (action < 0.78) {
      log.push(`${step}: ${device.id} ${device.online ? 'offline' : 'online'}`)
      device.setOnline(!device.online)
    } else if (action < 0.84) {
      const kill = kind === 'process' && rand() < 0.6
      log.push(`${step}: relay ${kill ? 'killed' : 'stopped'}, restarted`)
      await relay.stop(kill)
      // Devices write while it is down.
      for (const d of devices) if (d.running && rand() < 0.5) d.produce(1 + pick(3), KEYS)
      await relay.start()
    } else if (action < 0.9) {
      const crash = rand() < 0.5
      log.push(`${step}: dashboard ${crash ? 'crashes' : 'closes'}, reopens`)
      if (crash) dashboard.crash()
      else await dashboard.close()
      await dashboard.open()
    } else {
      // Let traffic and commits run for a while.
      for (let i = 0, n = 1 + pick(20); i < n; i++) await turn()
    }
    await turn()
  }

  // Everything back: every device running and online; producers re-send what was never acknowledged.
  for (const device of devices) {
    if (!device.running) await device.open()
    if (!device.online) device.setOnline(true)
  }
  await until(
    () => {
      for (const device of devices) device.resend(KEYS)
      return devices.every((device) => device.settled())
    },
    'every device acknowledged and in sync',
  ).catch((error: Error) => {
    throw new Error(`${error.message}\n${devices.map((d) => `${d.id}: acked ${d.acked}/${d.sent.length} ${JSON.stringify(d.engine?.syncStatus())} ${d.engine?.stats().persistenceError}\n  ${d.debug.join('\n  ')}`).join('\n')}\n${errors.join('\n')}\n${log.join('\n')}`)
  })

  const truthOf = (sources: readonly ChaosDevice[]): Engine => {
    // Values only: a manual watermark, so one device's readings never make another's late here.
    const engine = createEngine(chaosOptions('manual'))
    for (const device of sources) engine.ingest(device.sent)
    return engine
  }
  const expected = JSON.stringify(values(truthOf(devices)))
  const board = (): Engine => dashboard.engine as Engine
  const same = (): boolean => JSON.stringify(values(board())) === expected
  // Not thrown here: a timeout fails at the assertions below, which say what was pending (the
  // rooms and connection, or the values with their diff).
  const waited = await until(() => dashboard.follower?.rooms().size === DEVICES && board().syncStatus().state === 'connected' && same(), 'the dashboard shows the ground truth').then(
    () => 'reached',
    (error: Error) => error.message,
  )
  const story = `${profile}, relay ${kind}, producers ${mode}, offline by ${cutOffline ? 'cut' : 'disconnect'}, ${KEYS} keys, checkpoint every ${checkpointEvents} events (wait: ${waited}):\n${log.join('\n')}\ncounters ${JSON.stringify(devices.map((d) => [d.id, d.sent.length, d.counters]))}`
  // The dashboard follows every device's room and is connected.
  expect([dashboard.follower?.rooms().size, board().syncStatus().state], `the dashboard's rooms followed and connection state; ${story}`).toEqual([DEVICES, 'connected'])
  // Each device's own engine holds its readings exactly once.
  for (const device of devices) expect.soft(values(device.engine as Engine), `${device.id}'s own engine; ${story}`).toEqual(values(truthOf([device])))
  expect(values(board()), `the dashboard; ${story}`).toEqual(values(truthOf(devices)))
  // The comparisons cover the aggregates' results too.
  expect(values(board()).every((result) => result.aggregates !== undefined)).toBe(true)
  // Nothing the clients could not use, no binding error, no anomaly but duplicates, no acknowledged seq missing at a reopen.
  expect(errors).toEqual([])
  return `seed ${seed} (${profile}, relay ${kind}, producers ${mode}, offline by ${cutOffline ? 'cut' : 'disconnect'}, ${KEYS} keys): ${log.length} events, readings ${devices.map((d) => d.sent.length).join('/')}, crashes ${devices.map((d) => d.counters.crashes).join('/')}, re-sent duplicates ${devices.map((d) => d.counters.duplicates).join('/')}`
}

describe('a fleet under chaos through the relay', () => {
  it.each(cases)('seed %i, relay %s: the dashboard equals the ground truth after crashes, outages and relay restarts', async (seed, kind) => {
    try {
      console.log(await run(seed, kind))
    } catch (error) {
      const repro = `TIDEMARK_SEED=${seed} TIDEMARK_CHAOS_RELAY=${kind} npx vitest run --project relay ${FILE}`
      console.error(`seed ${seed}; repro: ${repro}`)
      throw new Error(`seed ${seed}; repro: ${repro}\n${error instanceof Error ? error.message : String(error)}`, { cause: error })
    }
  })
})
