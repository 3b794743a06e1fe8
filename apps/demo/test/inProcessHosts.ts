import { createEngine, type Engine, type EngineStats, type IngestReceipt, type ResultQuery, type StreamEvent, type WindowChange } from '@tidemark/engine'
import { indexedDbPersistence, openEngine, type Persistence, type RecoveryReport, recoveryReport } from '@tidemark/idb'
import type { RemoteEngine, WorkerConnection } from '@tidemark/worker'
import type { HostContext, HostEngineOptions } from '@tidemark/worker/host'
import { dashboardHostOptions } from '../src/fleet/dashboardHost.ts'
import { deviceHostOptions } from '../src/fleet/deviceHost.ts'
import type { FleetHosts, HostRequest } from '../src/fleet/fleetHosts.ts'
import type { LinkTransports } from '../src/fleet/fleetWiring.ts'
import type { HostPlatform } from '../src/fleet/hostPlatform.ts'
import type { FleetAggregates } from '../src/fleet/fleetAggregates.ts'
import { seededRandom } from '@tidemark/seeded-random'

interface Timer {
  readonly ms: number
  next: number
  readonly run: () => void
}

/**
 * One host as a worker would run it, in this process: the same `HostEngineOptions` the worker
 * files pass to `hostEngine` (its engine over an IndexedDB log named after the host, its
 * `setup`, its commands), on a fake clock whose timers the test advances. `terminate()` drops it
 * as an ended worker is dropped: timers stop, the log's claim ends, nothing is closed.
 */
class InProcessHost {
  readonly name: string
  readonly instance = globalThis.crypto.randomUUID()
  readonly options: HostEngineOptions<FleetAggregates>
  readonly timers = new Set<Timer>()
  readonly pages = new Set<InProcessEngine>()
  readonly claim = { held: true }
  /** Every batch this host's engine was given (a device's uploads), as given: what tests compute expected aggregates from. */
  readonly ingested: StreamEvent[] = []
  engine: Engine<FleetAggregates> | null = null
  context: HostContext<FleetAggregates> | null = null
  persistence: Persistence | null = null
  cleanup: (() => void) | null = null
  dead = false
  readonly kind: HostRequest['kind']

  constructor(
    name: string,
    kind: HostRequest['kind'],
    options: (platform: HostPlatform) => HostEngineOptions<FleetAggregates>,
    platform: (host: InProcessHost) => HostPlatform,
  ) {
    this.name = name
    this.kind = kind
    this.options = options(platform(this))
  }

  async start(config: unknown, indexedDB: IDBFactory): Promise<void> {
    const { engine: engineOptions, log, setup } = this.options
    const resolved = typeof engineOptions === 'function' ? await engineOptions(config) : engineOptions
    if (log === false) {
      this.engine = createEngine(resolved)
    } else {
      this.persistence = indexedDbPersistence({ name: `tidemark-log-${this.name}`, claim: this.claim, indexedDB })
      this.engine = await openEngine({ ...resolved, persistence: this.persistence })
    }
    const engine = this.engine
    const ingest = engine.ingest.bind(engine)
    engine.ingest = (events) => {
      this.ingested.push(...events)
      return ingest(events)
    }
    this.context = { engine, config, mode: 'shared', instance: this.instance, epoch: 1 }
    const cleanup = await setup?.(this.context)
    if (typeof cleanup === 'function') this.cleanup = cleanup
  }

  /** Runs a command as the host would for a page: a structured clone in, a structured clone out. */
  async command(name: string, payload: unknown): Promise<unknown> {
    const run = this.options.commands?.[name]
    const context = this.context
    if (run === undefined || context === null) throw new RangeError(`${this.name} has no command '${name}'`)
    return structuredClone(await run(structuredClone(payload), context))
  }
}

/**
 * The fleet's hosts run in this process with the same host options as the workers: what the
 * tests of the fleet use in place of `workerHosts()`. A host name has one live host, which every
 * page connecting under that name shares (as a SharedWorker per name); a host that terminates
 * (a crash, a retire) is started again for the pages still connected, which reopens its log, and
 * each page sees the new instance as a takeover. Timers run when the test calls `tick(now)`.
 *
 * @example
 * const world = inProcessHosts({ now: () => clock.now, indexedDB: new IDBFactory(), transports: pages.transports })
 * const fleet = new Fleet({ wiring, hosts: world.hosts })
 * clock.now += 100
 * world.tick(clock.now)
 */
export function inProcessHosts(options: {
  readonly now: () => number
  readonly indexedDB: IDBFactory
  readonly transports: LinkTransports
  /** The dashboard's host's transports, when they differ (a link of its own to cut); default `transports`. */
  readonly dashboardTransports?: LinkTransports
  /** Seeds each host's random numbers (its relay client's reconnect jitter) with this and its name; default 1. */
  readonly seed?: number
}) {
  const live = new Map<string, { readonly host: InProcessHost; readonly started: Promise<void> }>()
  const all = new Set<InProcessHost>()

  const platformOf = (host: InProcessHost): HostPlatform => ({
    now: options.now,
    random: seededRandom(hostSeed(options.seed ?? 1, host.name.slice(host.name.lastIndexOf(':') + 1))),
    every(ms, run) {
      const timer: Timer = { ms, next: options.now() + ms, run }
      host.timers.add(timer)
      return () => host.timers.delete(timer)
    },
    timers: {
      setTimeout(run, ms) {
        // One-shot: it leaves the host's timers as it runs.
        const timer: Timer = {
          ms: Number.POSITIVE_INFINITY,
          next: options.now() + Math.max(0, ms),
          run: () => {
            host.timers.delete(timer)
            run()
          },
        }
        host.timers.add(timer)
        return timer
      },
      clearTimeout(handle) {
        host.timers.delete(handle as Timer)
      },
    },
    terminate() {
      // After the command's answer, as the worker's close() comes one task after it.
      setImmediate(() => drop(host))
    },
    transports: host.kind !== 'device' ? (options.dashboardTransports ?? options.transports) : options.transports,
  })

  const drop = (host: InProcessHost): void => {
    if (host.dead) return
    host.dead = true
    host.timers.clear()
    host.claim.held = false
    // Appends already issued finish; nothing after them is written. No checkpoint, no close.
    void host.persistence?.close().catch(() => {})
    if (live.get(host.name)?.host === host) live.delete(host.name)
    for (const page of host.pages) {
      page.lost('the host stopped')
      setImmediate(() => void reach(page.request).then((next) => page.attach(next)))
    }
    host.pages.clear()
  }

  /** The live host of the request's name, started with its config when there is none. */
  const reach = async (request: HostRequest): Promise<InProcessHost> => {
    let entry = live.get(request.name)
    if (entry === undefined) {
      const make = request.kind === 'device' ? deviceHostOptions : dashboardHostOptions
      const host = new InProcessHost(request.name, request.kind, (platform) => make(request.name, platform), platformOf)
      all.add(host)
      entry = { host, started: host.start(structuredClone(request.config), options.indexedDB) }
      live.set(request.name, entry)
    }
    await entry.started
    return entry.host
  }

  const hosts: FleetHosts = {
    async connect(request) {
      const engine = new InProcessEngine(request)
      engine.attach(await reach(request))
      return engine
    },
  }

  return {
    hosts,
    /** Runs every live host's timers that are due by `now`, in order of their due time. */
    tick(now: number): void {
      for (const host of all) {
        for (const timer of host.timers) {
          while (!host.dead && host.timers.has(timer) && timer.next <= now) {
            timer.next += timer.ms
            timer.run()
          }
        }
      }
    },
    /** Runs a command of the live host `name` that answers at once (`status`), as its page would, without the wire. */
    call(name: string, command: string): unknown {
      const host = live.get(name)?.host
      const run = host?.options.commands?.[command]
      if (host === undefined || host.context === null || run === undefined) return undefined
      return run(undefined, host.context)
    },
    /** The live host named `name`. */
    host(name: string): InProcessHost | undefined {
      return live.get(name)?.host
    },
    /** Every host started so far, live or not. */
    started(): number {
      return all.size
    },
    /** Stops every live host as its last page leaving would: its cleanup, then its engine closed. */
    async shutdown(): Promise<void> {
      const failures: unknown[] = []
      for (const { host, started } of [...live.values()]) {
        await started.catch((error: unknown) => failures.push(new Error(`host ${host.name} did not start`, { cause: error })))
        host.dead = true
        host.timers.clear()
        host.cleanup?.()
        await host.engine?.close().catch((error: unknown) => failures.push(new Error(`host ${host.name} did not close`, { cause: error })))
      }
      live.clear()
      if (failures.length > 0) throw new AggregateError(failures, `${failures.length} host(s) failed at shutdown: ${failures.map((f) => `${(f as Error).message}: ${String((f as Error).cause)}`).join('; ')}`)
    },
  }
}

/** A host's seed: `seed` mixed with the last part of its name (`d07`, FNV-1a), so each device draws its own jitter, the same in every run of `seed`. */
function hostSeed(seed: number, name: string): number {
  let hash = (0x811c9dc5 ^ seed) >>> 0
  for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 0x01000193) >>> 0
  return hash
}

/**
 * A page's `RemoteEngine` of an in-process host: reads straight from the host's engine (no
 * mirror, no frames), commands through the host's command table, takeovers as the worker
 * package reports them (`connection().takeovers`, `onConnection`).
 */
export class InProcessEngine implements RemoteEngine<FleetAggregates> {
  readonly request: HostRequest
  #host: InProcessHost | null = null
  #engine: Engine<FleetAggregates> | null = null
  #stopFeed: () => void = () => {}
  readonly #listeners = new Set<(changes: readonly WindowChange<FleetAggregates>[]) => void>()
  readonly #connectionListeners = new Set<(connection: WorkerConnection) => void>()
  #connection: WorkerConnection = {
    mode: 'shared',
    state: 'reconnecting',
    leader: false,
    instance: '',
    epoch: 0,
    takeovers: 0,
    lastTakeoverMs: null,
    inFlightEvents: 0,
    queuedEvents: 0,
    reason: null,
  }

  constructor(request: HostRequest) {
    this.request = request
  }

  attach(host: InProcessHost): void {
    if (this.#connection.state === 'closed') return
    const engine = host.engine as Engine<FleetAggregates>
    host.pages.add(this)
    this.#host = host
    this.#engine = engine
    this.#stopFeed()
    this.#stopFeed = engine.subscribe((changes) => {
      for (const listener of this.#listeners) listener(changes)
    })
    const takeover = this.#connection.instance !== '' && this.#connection.instance !== host.instance
    this.#set({ state: 'connected', instance: host.instance, takeovers: this.#connection.takeovers + (takeover ? 1 : 0), reason: null })
  }

  /**
   * Hands every corrected window's latest result out again as a correction, as the worker
   * package's mirror does when a window's history arrives (or a takeover replaces the mirror).
   */
  echoCorrections(): void {
    const changes: WindowChange<FleetAggregates>[] = this.#live()
      .results()
      .filter((result) => result.revision > 0)
      .map((result) => ({ type: 'correction', result, pane: result.pane }))
    for (const listener of this.#listeners) listener(changes)
  }

  lost(reason: string): void {
    this.#host = null
    this.#set({ state: 'reconnecting', reason })
  }

  #set(change: Partial<WorkerConnection>): void {
    this.#connection = { ...this.#connection, ...change }
    for (const listener of this.#connectionListeners) listener(this.#connection)
  }

  #live(): Engine<FleetAggregates> {
    if (this.#engine === null) throw new Error(`${this.request.name}: not connected`)
    return this.#engine
  }

  async ingest(events: readonly StreamEvent[]): Promise<IngestReceipt> {
    return this.#live().ingest(events)
  }

  async nextSeq(source: string): Promise<number> {
    return this.#live().nextSeq(source)
  }

  async advanceWatermark(t: number): Promise<void> {
    this.#live().advanceWatermark(t)
  }

  async tick(): Promise<void> {
    this.#live().tick()
  }

  finishSource(source: string): Promise<void> {
    return this.#live().finishSource(source)
  }

  async command(name: string, payload?: unknown): Promise<unknown> {
    const host = this.#host
    if (host === null || host.dead) throw new Error(`the engine's host went away before answering command (${this.#connection.reason}); it may or may not have run it`)
    return host.command(name, payload)
  }

  recovery(): RecoveryReport | null {
    return this.#engine === null ? null : (recoveryReport(this.#engine) ?? null)
  }

  connection(): WorkerConnection {
    return this.#connection
  }

  onConnection(listener: (connection: WorkerConnection) => void): () => void {
    this.#connectionListeners.add(listener)
    return () => this.#connectionListeners.delete(listener)
  }

  get writable(): WritableStream<readonly StreamEvent[]> {
    return this.#live().writable
  }

  changes(): ReadableStream<readonly WindowChange<FleetAggregates>[]> {
    return this.#live().changes()
  }

  async close(): Promise<void> {
    if (this.#connection.state === 'closed') throw new Error('the remote engine is closed')
    this.#stopFeed()
    this.#host?.pages.delete(this)
    this.#host = null
    this.#set({ state: 'closed', reason: null })
    this.#listeners.clear()
  }

  results(query?: ResultQuery) {
    return this.#live().results(query)
  }

  subscribe(listener: (changes: readonly WindowChange<FleetAggregates>[]) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  watermark(): number {
    return this.#live().watermark()
  }

  lateEvents() {
    return this.#live().lateEvents()
  }

  stats(): EngineStats {
    return this.#live().stats()
  }

  syncStatus() {
    return this.#live().syncStatus()
  }

  history(window: string, key: string, start: number, end?: number) {
    return this.#live().history(window, key, start, end)
  }
}
