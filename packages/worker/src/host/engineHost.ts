import type { Engine } from '@tidemark/engine'
import { isFencedError, recoveryReport } from '@tidemark/idb'
import { claimLog, type LogClaim, type LogLocks } from '@tidemark/idb/log'
import { randomId } from '../common/randomId.ts'
import { reportError } from '../common/reportError.ts'
import { addressOf, type WindowAddress } from '../common/windowAddress.ts'
import type { EventBatch } from '../protocol/eventColumns.ts'
import { aggregateIdentities } from '../protocol/aggregateIdentities.ts'
import { type HelloMessage, type HostCall, type HostMessage, type HostMode, type MirroredOptions, PROTOCOL_VERSION, type WireError, wireError } from '../protocol/messages.ts'
import { lockNames, type WorkerClock, type WorkerLocks } from '../page/platform.ts'
import { FramePump } from './framePump.ts'
import { type ClientLink, HostClient } from './hostClient.ts'
import type { HostContext, HostEngineOptions } from './hostOptions.ts'
import { ingestBatch } from './ingestBatch.ts'
import { openHostedEngine } from './openHostedEngine.ts'
import { runHostCall } from './runHostCall.ts'
import { TabWatches } from './tabWatches.ts'

/** A page's hello as it arrives: unchecked. */
type Hello = { readonly [K in keyof HelloMessage]?: unknown }

/** What the host uses of its worker's platform (injected in tests). */
export interface HostPlatform {
  /** `navigator.locks`, or null without Web Locks. */
  readonly locks: (WorkerLocks & LogLocks) | null
  /** Defaults to `globalThis.indexedDB`. */
  readonly indexedDB?: IDBFactory
  readonly clock: WorkerClock
}

/** How this host was started. */
export interface HostRole {
  readonly mode: HostMode
  /** Take the log from a silent writer (a leader tab that stole leadership). */
  readonly steal: boolean
}

/** What the host tells the worker scope around it (which beats and closes). */
export interface HostEvents {
  /** The log is claimed: the host's epoch is known. */
  claimed?(epoch: number): void
  /** The engine is open and pages are welcomed. */
  ready?(): void
  /** Another host took the log; this one answers nothing more. */
  deposed?(reason: string): void
  /** The page behind `link` is gone. */
  dropped?(link: ClientLink): void
}

const DEFAULT_CREDITS = 50_000
const DEFAULT_FRAME_MS = 16

/**
 * The engine's host, inside a worker: opens the engine over the origin's log, runs the app's
 * `setup` (its providers), welcomes pages with a snapshot, applies their batches (answering
 * each with its receipt, then with its durability), and sends each page, about once per frame,
 * only the windows that changed since its last frame. Free of worker globals, so tests drive it
 * over MessageChannels with fake locks and timers; `hostEngine` wires it into a worker.
 */
export class EngineHost {
  readonly instance: string
  readonly #options: HostEngineOptions
  readonly #platform: HostPlatform
  readonly #role: HostRole
  readonly #events: HostEvents
  readonly #clients = new Map<ClientLink, HostClient>()
  /** Hellos that came before the engine was open. */
  readonly #waiting: { readonly link: ClientLink; readonly tab: string; readonly claim: string | null }[] = []
  #epoch = 0
  #engine: Engine | null = null
  #claim: LogClaim | null = null
  #config: { readonly value: unknown } | null = null
  /** `start` waits here for the first page's config; rejected when the host is deposed or stopped first. */
  #configWait: { readonly resolve: () => void; readonly reject: (error: Error) => void } | null = null
  #context: HostContext | null = null
  #cleanup: (() => void) | null = null
  /** What pages need of the engine's options to expire windows as it does, and what its panes carry. */
  #mirrored: MirroredOptions = { allowedLateness: 0, retention: 60_000, accumulation: 'accumulating', aggregates: [] }
  #deposed: string | null = null
  /** Why the host could not start, and the error that stopped it, told to every page. */
  #failure: { readonly reason: string; readonly error: WireError } | null = null
  #stopped = false
  #releaseHostLock: (() => void) | null = null
  /** The host holds its own lock, which pages watch: a page told to wait is told the instance to watch. */
  #hostLockHeld = false
  readonly #tabWatches: TabWatches
  readonly #frames: FramePump

  constructor(options: HostEngineOptions, platform: HostPlatform, role: HostRole, events: HostEvents = {}) {
    this.#options = options
    this.#platform = platform
    this.#role = role
    this.#events = events
    this.instance = randomId()
    this.#tabWatches = new TabWatches(platform.locks, options.name)
    this.#frames = new FramePump(platform.clock, options.frameMs ?? DEFAULT_FRAME_MS, () => this.#clients.values())
  }

  get epoch(): number {
    return this.#epoch
  }

  get ready(): boolean {
    return this.#frames.attached && this.#deposed === null
  }

  /** The pages connected now. */
  get clients(): number {
    return this.#clients.size
  }

  /** Rows waiting for pages that lag (a frozen or busy tab), over all pages. */
  get backlog(): number {
    let rows = 0
    for (const client of this.#clients.values()) rows += client.backlog
    return rows
  }

  /** The hosted engine, once open. */
  get engine(): Engine | null {
    return this.#engine
  }

  /**
   * Claims the log, waits for the first page's config, opens the engine and runs `setup`;
   * then welcomes the waiting pages. When that fails, every page is told why. A host that
   * another host fenced out while it started (or that was stopped meanwhile) undoes what it
   * set up and tells the waiting pages to go to the next host (`refused`, `deposed`): that is
   * no failure of theirs.
   */
  async start(): Promise<HostContext> {
    try {
      await this.#start()
    } catch (error) {
      if (this.#deposed === null && !this.#stopped && isFencedError(error)) this.depose(`another host took the log while this one started (${(error as Error).message})`)
      const gone = this.#deposed ?? (this.#stopped ? 'the host stopped' : null)
      if (gone !== null) {
        for (const { link } of this.#waiting.splice(0)) link.send({ t: 'refused', reason: gone, deposed: true }, [])
      } else {
        this.#failure = { reason: `the engine's host could not start: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`, error: wireError(error) }
        for (const { link } of this.#waiting.splice(0)) link.send({ t: 'refused', ...this.#failure }, [])
      }
      // Whatever start set up after a shutdown already ran (an engine opened, a setup's cleanup) ends here.
      // A host that failed keeps its lock: it still answers pages with why, and pages watching the
      // lock must not take it for gone (and look for another host) before they read that answer.
      await this.#shutdown(gone === null)
      throw error
    }
    return this.#context as HostContext
  }

  /** Throws when the host was deposed or stopped during `start`'s last await: what it set up is undone by `start`. */
  #stillStarting(): void {
    if (this.#deposed !== null) throw new Error(`the host stopped starting: ${this.#deposed}`)
    if (this.#stopped) throw new Error('the host stopped starting: it was stopped')
  }

  async #start(): Promise<void> {
    const { name, log } = this.#options
    const locks = this.#platform.locks
    // Pages take this host for gone once its lock is free: it serves none before it holds it.
    await this.#holdHostLock(locks, name)
    this.#stillStarting()
    if (locks !== null) {
      // Pages already told to wait learn which lock to watch: they notice a crash before the welcome.
      this.#hostLockHeld = true
      for (const { link } of this.#waiting) link.send({ t: 'waiting', instance: this.instance }, [])
    }
    if (log !== false) {
      const claim = await claimLog({
        name,
        steal: this.#role.steal,
        ...(locks === null ? { withoutLocks: 'single-tab' as const } : { locks }),
        ...(this.#platform.indexedDB === undefined ? {} : { indexedDB: this.#platform.indexedDB }),
      })
      this.#claim = claim
      this.#stillStarting()
      claim.lost.then(() => this.depose('another host took the log'))
      this.#epoch = claim.epoch
    } else this.#epoch = this.#platform.clock.now()
    this.#events.claimed?.(this.#epoch)
    const config = await this.#firstConfig()
    this.#stillStarting()
    const engineOptions = typeof this.#options.engine === 'function' ? await this.#options.engine(config) : this.#options.engine
    this.#stillStarting()
    const engine = await openHostedEngine(engineOptions, this.#claim, this.#options.log, this.#platform.indexedDB)
    this.#engine = engine
    this.#stillStarting()
    this.#mirrored = {
      allowedLateness: engineOptions.allowedLateness ?? 0,
      retention: engineOptions.retention ?? 60_000,
      accumulation: engineOptions.accumulation ?? 'accumulating',
      aggregates: aggregateIdentities(engineOptions.aggregates),
    }
    const context: HostContext = { engine, config, mode: this.#role.mode, instance: this.instance, epoch: this.#epoch }
    this.#context = context
    const cleanup = await this.#options.setup?.(context)
    if (typeof cleanup === 'function') this.#cleanup = cleanup
    this.#stillStarting()
    this.#frames.attach(engine, this.#keepsPanes)
    this.#events.ready?.()
    for (const { link, tab, claim } of this.#waiting.splice(0)) this.#welcome(link, tab, claim)
  }

  /** Hands a page's message to the host; `link` is how the host answers that page. */
  receive(link: ClientLink, message: unknown): void {
    if (typeof message !== 'object' || message === null) return
    const m = message as { readonly t?: unknown }
    if (m.t === 'hello') {
      this.#hello(link, message as Hello)
      return
    }
    // Also from a page still waiting for the host to start.
    if (m.t === 'bye') {
      this.drop(link)
      return
    }
    const client = this.#clients.get(link)
    if (client === undefined) return
    switch (m.t) {
      case 'ingest': {
        const { req, batch } = message as { req: number; batch: EventBatch }
        this.#ingest(client, req, batch)
        return
      }
      case 'ack':
        client.ack((message as { frame: number }).frame)
        this.#frames.acknowledged(client)
        return
      case 'watch-history':
        client.watch(address(message as WindowAddress))
        this.#frames.schedule()
        return
      case 'unwatch-history':
        client.unwatch(address(message as WindowAddress))
        return
      case 'call': {
        const { req, call } = message as { req: number; call: HostCall }
        void this.#call(client, req, call)
        return
      }
    }
  }

  /** Forgets the page behind `link` (its tab is gone). */
  drop(link: ClientLink): void {
    // A page that leaves while the host is still starting is not welcomed later.
    if (this.#waiting.some((entry) => entry.link === link)) {
      // Every hello it sent: a page that said hello twice is still one page.
      for (let i = this.#waiting.length - 1; i >= 0; i--) if (this.#waiting[i]?.link === link) this.#waiting.splice(i, 1)
      this.#events.dropped?.(link)
      return
    }
    const client = this.#clients.get(link)
    if (client === undefined) return
    this.#clients.delete(link)
    this.#tabWatches.forget(client)
    this.#events.dropped?.(link)
  }

  /** Stops answering: another host took the log. Pages are told, and send their batches to the next host. */
  depose(reason: string): void {
    if (this.#deposed !== null || this.#stopped) return
    this.#deposed = reason
    // Welcomed pages and pages still waiting for the engine alike go to the next host.
    for (const client of this.#clients.values()) client.link.send({ t: 'refused', reason, deposed: true }, [])
    for (const { link } of this.#waiting.splice(0)) link.send({ t: 'refused', reason, deposed: true }, [])
    this.#configWait?.reject(new Error(`the host stopped starting: ${reason}`))
    this.#events.deposed?.(reason)
    void this.#shutdown()
  }

  /** Stops the host: runs the setup's cleanup, closes the engine (a last checkpoint) and lets the log go. */
  async stop(): Promise<void> {
    if (this.#stopped) return
    this.#stopped = true
    this.#configWait?.reject(new Error('the host stopped starting: it was stopped'))
    await this.#shutdown()
  }

  async #shutdown(keepHostLock = false): Promise<void> {
    this.#frames.stop()
    this.#tabWatches.forgetAll()
    // Runs again when `start` set up more after a first shutdown: each piece ends once.
    const cleanup = this.#cleanup
    this.#cleanup = null
    try {
      cleanup?.()
    } catch (error) {
      reportError(error)
    }
    const engine = this.#engine
    this.#engine = null
    // A deposed host's last checkpoint is refused by the fence (FencedError): nothing to keep of it.
    await engine?.close().catch((error: unknown) => {
      if (this.#deposed === null || !isFencedError(error)) reportError(error)
    })
    await this.#claim?.release().catch(reportError)
    if (!keepHostLock) this.#releaseHostLock?.()
  }

  /**
   * Takes this host's own lock; resolves once it is held, rejects when the request fails (a
   * start failure). Pages wait on this lock: it is granted to them when this host is gone (a
   * crash included). Lost later (nothing should take it), the host is reported and deposed:
   * its pages already took it for gone.
   */
  #holdHostLock(locks: WorkerLocks | null, name: string): Promise<void> {
    if (locks === null) return Promise.resolve()
    return new Promise((held, failed) => {
      let granted = false
      locks
        .request(lockNames.host(name, this.instance), {}, () => {
          granted = true
          held()
          if (this.#stopped || this.#deposed !== null) return undefined
          return new Promise<void>((resolve) => {
            this.#releaseHostLock = resolve
          })
        })
        .then(
          () => {},
          (error: unknown) => {
            if (!granted) {
              failed(error)
              return
            }
            reportError(error)
            this.depose(`the host lost its lock (${error instanceof Error ? `${error.name}: ${error.message}` : String(error)})`)
          },
        )
    })
  }

  #firstConfig(): Promise<unknown> {
    if (this.#config !== null) return Promise.resolve(this.#config.value)
    return new Promise((resolve, reject) => {
      this.#configWait = {
        resolve: () => resolve(this.#config?.value),
        reject,
      }
    }).finally(() => {
      this.#configWait = null
    })
  }

  #hello(link: ClientLink, hello: Hello): void {
    if (hello.v !== PROTOCOL_VERSION) {
      link.send({ t: 'refused', reason: `this host speaks protocol ${PROTOCOL_VERSION}, the page ${String(hello.v)}: reload the page` }, [])
      return
    }
    if (this.#deposed !== null) {
      link.send({ t: 'refused', reason: this.#deposed, deposed: true }, [])
      return
    }
    if (this.#failure !== null) {
      link.send({ t: 'refused', ...this.#failure }, [])
      return
    }
    const tab = typeof hello.tab === 'string' ? hello.tab : ''
    const claim = typeof hello.claim === 'string' ? hello.claim : null
    // A page reaches its host through one link at a time: a hello through another link means the
    // page let the earlier one go (it made its SharedWorker again when no answer came).
    if (tab !== '') for (const other of this.#linksOf(tab)) if (other !== link) this.drop(other)
    if (this.#config === null) {
      this.#config = { value: hello.config }
      this.#configWait?.resolve()
    }
    if (this.#frames.attached) this.#welcome(link, tab, claim)
    else {
      this.#waiting.push({ link, tab, claim })
      link.send(this.#hostLockHeld ? { t: 'waiting', instance: this.instance } : { t: 'waiting' }, [])
    }
  }

  /** The links of the pages (welcomed or waiting) of the tab `tab`. */
  #linksOf(tab: string): ClientLink[] {
    const links: ClientLink[] = []
    for (const client of this.#clients.values()) if (client.tab === tab) links.push(client.link)
    for (const entry of this.#waiting) if (entry.tab === tab) links.push(entry.link)
    return links
  }

  /** Welcomes a page; `claim`, the source its tab claimed, is said to be finished when the engine holds a finish of it (or later, when one is merged). */
  #welcome(link: ClientLink, tab: string, claim: string | null): void {
    const engine = this.#engine
    if (engine === null) return
    this.drop(link)
    const finished = claim !== null && engine.isFinished(claim)
    const client = new HostClient(tab, link, this.#keepsPanes, finished ? null : claim)
    this.#clients.set(link, client)
    this.#tabWatches.watch(client, () => this.drop(link))
    const options = this.#mirrored
    const frame = this.#frames.snapshot(client)
    const message: HostMessage = {
      t: 'welcome',
      v: PROTOCOL_VERSION,
      instance: this.instance,
      epoch: this.#epoch,
      mode: this.#role.mode,
      credits: this.#options.credits ?? DEFAULT_CREDITS,
      options,
      recovery: recoveryReport(engine) ?? null,
      frame,
      ...(finished ? { finished: true } : {}),
    }
    // A live window the structured clone refuses fails this page, with the reason; the host goes on.
    if (!client.sendFrame(message, frame)) this.drop(link)
  }

  /** Discarding mode: every pane is an increment a page adds up, so none is left out of a frame. */
  get #keepsPanes(): boolean {
    return this.#mirrored.accumulation === 'discarding'
  }

  #ingest(client: HostClient, req: number, batch: EventBatch): void {
    ingestBatch(client, req, batch, {
      engine: this.#engine,
      credits: this.#options.credits ?? DEFAULT_CREDITS,
      deposed: () => this.#deposed !== null,
      depose: (reason) => this.depose(reason),
    })
  }

  async #call(client: HostClient, req: number, call: HostCall): Promise<void> {
    const engine = this.#engine
    const context = this.#context
    if (engine === null || context === null || this.#deposed !== null) {
      client.link.send({ t: 'reply', req, error: { name: 'Error', message: 'the host stopped' }, retry: true }, [])
      return
    }
    try {
      // Only a command and a finish (until durable) may be async: the engine's other calls are answered in the task that ran them.
      const result = runHostCall(engine, context, this.#options.commands, call)
      if (call.op === 'finish') client.finishing(call.source, engine)
      const value = call.op === 'command' || call.op === 'finish' ? await result : result
      client.link.send({ t: 'reply', req, value }, [])
    } catch (error) {
      client.link.send({ t: 'reply', req, error: wireError(error) }, [])
    }
  }
}

function address(m: WindowAddress): WindowAddress {
  const { window, key, start, end } = m
  return addressOf(end === undefined ? { window: String(window), key: String(key), start: Number(start) } : { window: String(window), key: String(key), start: Number(start), end: Number(end) })
}
