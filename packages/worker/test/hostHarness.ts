import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import type { AggregateDefinitions } from '@tidemark/engine'
import { aggregateIdentities } from '../src/protocol/aggregateIdentities.ts'
import { EngineHost, type HostPlatform, type HostRole } from '../src/host/engineHost.ts'
import type { ClientLink } from '../src/host/hostClient.ts'
import type { HostEngineOptions } from '../src/host/hostOptions.ts'
import type { HostConnector, HostLink, LinkSink } from '../src/page/hostLink.ts'
import { MirroredEngine } from '../src/page/mirroredEngine.ts'
import type { WorkerLocks } from '../src/page/platform.ts'
import type { HostMode } from '../src/protocol/messages.ts'
import type { WorkerSourceClaim } from '../src/page/sourceRetirement.ts'
import { FakeLockManager } from './fakeLocks.ts'
import { FakeTime, settle } from './fakeTimers.ts'

/**
 * A host and its pages in one Node process: messages cross as a port carries them (a
 * structured clone, typed-array buffers transferred), one macrotask later. A link can be held
 * (a frozen page or host: its messages wait) or cut (a crash: they are lost).
 */
export class Wire {
  held = false
  cut = false
  readonly #waiting: (() => void)[] = []
  /** Messages of these types are dropped on the way (a page that never acknowledges). */
  readonly drop = new Set<string>()

  carry(data: unknown, transfer: Transferable[], deliver: (data: unknown) => void): void {
    if (this.cut || this.drop.has((data as { t?: string }).t ?? '')) return
    const copy = structuredClone(data, { transfer: transfer as Transferable[] })
    const run = (): void => {
      if (!this.cut) deliver(copy)
    }
    setImmediate(() => {
      if (this.held) this.#waiting.push(run)
      else run()
    })
  }

  release(): void {
    this.held = false
    for (const run of this.#waiting.splice(0)) run()
  }
}

/** One world: an origin's IndexedDB and Web Locks, fake time, hosts and pages. */
export class World {
  readonly time = new FakeTime()
  readonly locks = new FakeLockManager()
  readonly indexedDB = new IDBFactory()
  #hosts = 0
  #pages = 0

  /** A host; `withoutLocks` gives it no Web Locks (single mode on an insecure origin). */
  host(options: HostEngineOptions, role: HostRole = { mode: 'shared', steal: false }, withoutLocks = false): TestHost {
    const id = `host-${++this.#hosts}`
    const platform: HostPlatform = {
      locks: withoutLocks ? null : (this.locks.as(id) as HostPlatform['locks']),
      indexedDB: this.indexedDB,
      clock: this.time.clock(id),
    }
    return new TestHost(id, new EngineHost(options, platform, role))
  }

  /** A page connected through a connector that links to whichever host `to()` names. */
  page(to: () => TestHost | null, options: { config?: unknown; maxQueuedEvents?: number; withoutLocks?: boolean; aggregates?: AggregateDefinitions; mode?: HostMode; ownsHost?: boolean; claim?: WorkerSourceClaim } = {}): TestPage {
    // Numbered per world, so a test's tabs are the same on every run (and distinct from hand-named 'tab-1').
    const tab = `page-tab-${++this.#pages}`
    const connector = new TestConnector(to)
    const locks: WorkerLocks | null = options.withoutLocks === true ? null : this.locks.as(tab)
    const engine = new MirroredEngine({
      name: 'fleet',
      tab,
      mode: options.mode ?? 'shared',
      config: options.config,
      ...(options.aggregates === undefined ? {} : { aggregates: aggregateIdentities(options.aggregates) }),
      maxQueuedEvents: options.maxQueuedEvents ?? 200_000,
      connector,
      locks,
      clock: this.time.clock(tab),
      ownsHost: () => options.ownsHost === true,
      ...(options.claim === undefined ? {} : { claim: options.claim }),
    })
    // The tab's own lock, which hosts watch.
    void locks?.request(`tidemark-worker:fleet:tab:${tab}`, {}, () => new Promise<void>(() => {}))
    connector.start(engine)
    return { tab, engine, connector }
  }

  /** Lets messages flow and frames run for `ms` of fake time. */
  async run(ms = 100): Promise<void> {
    await settle()
    await this.time.run(ms, 5)
    await settle()
  }
}

export class TestHost {
  readonly id: string
  readonly host: EngineHost
  readonly started: Promise<unknown>

  constructor(id: string, host: EngineHost) {
    this.id = id
    this.host = host
    this.started = host.start()
    this.started.catch(() => {})
  }
}

export interface TestPage {
  readonly tab: string
  readonly engine: MirroredEngine
  readonly connector: TestConnector
}

/** Links a page to a `TestHost`, each direction over its own `Wire`. */
export class TestConnector implements HostConnector {
  readonly #to: () => TestHost | null
  #sink: LinkSink | null = null
  link: HostLink | null = null
  toHost: Wire | null = null
  toPage: Wire | null = null

  constructor(to: () => TestHost | null) {
    this.#to = to
  }

  start(sink: LinkSink): void {
    this.#sink = sink
    this.connect()
  }

  /** Opens a link to the host `to()` names now. */
  connect(): void {
    const target = this.#to()
    const sink = this.#sink
    if (target === null || sink === null) return
    const toHost = new Wire()
    const toPage = new Wire()
    const client: ClientLink = { send: (message, transfer) => toPage.carry(message, transfer, (data) => sink.message(link, data)) }
    const link: HostLink = {
      send: (message) => toHost.carry(message, [], (data) => target.host.receive(client, data)),
      close: () => {
        toHost.cut = true
        toPage.cut = true
      },
    }
    this.link = link
    this.toHost = toHost
    this.toPage = toPage
    sink.opened(link)
  }

  gone(link: HostLink): void {
    if (link === this.link) this.link = null
  }

  stop(): void {
    this.link?.close()
  }
}
