import type { AggregateDefinitions, NoAggregates } from '@tidemark/engine'
import { assertKnownOptions } from '@tidemark/engine/adapter'
import { randomId } from '../common/randomId.ts'
import { reportError } from '../common/reportError.ts'
import { aggregateIdentities } from '../protocol/aggregateIdentities.ts'
import { tabChannelName } from '../protocol/tabChannel.ts'
import type { HostMode } from '../protocol/messages.ts'
import type { HostConnector, HostLink } from './hostLink.ts'
import type { DedicatedWorkerFactory } from './hostWorker.ts'
import { LeaderConnector } from './leaderConnector.ts'
import { MirroredEngine } from './mirroredEngine.ts'
import { lockNames, type PageLifecycle, platformClock, platformLifecycle, platformLocks, platformUnload, type TabChannel, type WorkerClock, type WorkerLocks } from './platform.ts'
import type { RemoteEngine } from './remoteEngine.ts'
import { SharedConnector, type SharedWorkerFactory } from './sharedConnector.ts'
import { SingleConnector } from './singleConnector.ts'
import { checkClaim, type WorkerSourceClaim } from './sourceRetirement.ts'

/**
 * Options of `connectEngine`: `name` and `dedicated` are required.
 *
 * @example
 * const options: ConnectEngineOptions = {
 *   name: 'fleet',
 *   shared: (name) => new SharedWorker(new URL('./tidemark.worker.ts', import.meta.url), { type: 'module', name }),
 *   dedicated: (name) => new Worker(new URL('./tidemark.worker.ts', import.meta.url), { type: 'module', name }),
 *   config: { relayUrl: 'wss://relay.example.com', tokenUrl: '/api/relay-token', room: 'fleet-a/d07' },
 * }
 */
export interface ConnectEngineOptions<A extends AggregateDefinitions = NoAggregates> {
  /** The engine's name: the same as the worker's `hostEngine({ name })`. */
  readonly name: string
  /**
   * The aggregates of the host's engine, the same definitions its `engine` options have (share
   * one module): they type `result.aggregates` on the page, and a host whose engine has other
   * aggregates (names, or configurations) is refused with a reason (`connection().state`
   * `failed`). The page computes nothing with them.
   */
  readonly aggregates?: A
  /**
   * Makes the app's worker file as a SharedWorker. Write the `new SharedWorker(new URL('./file.ts',
   * import.meta.url), { type: 'module', name })` expression in the app itself, so the bundler
   * finds and emits the file. Without it (or without SharedWorker in this browser), leader mode.
   */
  readonly shared?: SharedWorkerFactory
  /** Makes the same worker file as a dedicated Worker (leader and single mode): `new Worker(new URL(...), { type: 'module', name })`. */
  readonly dedicated: DedicatedWorkerFactory
  /**
   * `auto` (default): `shared` where there is a SharedWorker and a `shared` factory, else
   * `leader` where there are Web Locks and BroadcastChannel, else `single`. Every tab of an
   * origin must end up in the same mode (with `auto` they do).
   */
  readonly mode?: 'auto' | HostMode
  /** Passed to the host's `engine` (when a function) and `setup`: the first page's is used. Structured-cloneable. */
  readonly config?: unknown
  /** Events that may wait on this page for the host (default 200,000); past it `ingest` rejects with `OverflowError`. */
  readonly maxQueuedEvents?: number
  /** Leader mode: how often the leader's host beats (default 250 ms) and how long a silent one is waited for before a follower takes over (default 1,500 ms). */
  readonly election?: { readonly heartbeatMs?: number; readonly staleMs?: number }
  /** Gives up waiting for the first host (the promise rejects with the signal's reason). */
  readonly signal?: AbortSignal
  /**
   * The tab's source claim (`claimSource` of `@tidemark/idb`), when the page writes one source.
   * The host's log holds its finishes, so the page retires the claim (`claim.retire()`: no later
   * tab session is handed the source) before `finishSource(claim.source)` resolves. And when the
   * tab that finished it went away before the host's answer reached it, the next page given the
   * source in a claim hears from the host that it is finished, and retires it once the finish is
   * durable; that session's own readings are refused (`finished_source`) until its next claim.
   * A finish that reaches the host later, merged from a peer, is told the same way to the page
   * holding the claim.
   */
  readonly claim?: WorkerSourceClaim
}

/** What the page uses of the platform; tests inject fakes. */
export interface ConnectPlatform {
  readonly locks?: WorkerLocks | null
  readonly clock?: WorkerClock
  readonly channel?: (name: string) => TabChannel
  readonly sharedWorkers?: boolean
  readonly lifecycle?: PageLifecycle | null
  /** Registers a listener for the page going away for good (`pagehide`, not into the back/forward cache). */
  readonly unload?: ((listener: () => void) => void) | null
}

const OPTION_KEYS: readonly (keyof ConnectEngineOptions)[] = ['name', 'shared', 'dedicated', 'mode', 'config', 'aggregates', 'maxQueuedEvents', 'election', 'signal', 'claim']
const MODES: readonly ConnectEngineOptions['mode'][] = ['auto', 'shared', 'leader', 'single']

/**
 * Connects this page to the engine hosted in a worker, so every tab of the origin shares one
 * engine, one log writer and one socket, and the page's main thread only draws. Resolves once
 * a host welcomed the page with the engine's state; the `RemoteEngine` goes wherever an engine
 * is read (`EngineProvider`, the hooks, `createEngineStore`). The host is found by mode: a
 * SharedWorker (`shared`); a dedicated worker in a leader tab elected with Web Locks, reached by
 * the other tabs over a BroadcastChannel, with takeover when the leader closes, crashes or
 * freezes (`leader`); or this tab's own worker (`single`, with neither).
 *
 * @example
 * import { connectEngine } from '@tidemark/worker'
 *
 * const engine = await connectEngine({
 *   name: 'fleet',
 *   shared: (name) => new SharedWorker(new URL('./tidemark.worker.ts', import.meta.url), { type: 'module', name }),
 *   dedicated: (name) => new Worker(new URL('./tidemark.worker.ts', import.meta.url), { type: 'module', name }),
 * })
 * engine.connection().mode // 'shared' in Chromium and Firefox, 'leader' where there is no SharedWorker
 */
export function connectEngine<A extends AggregateDefinitions = NoAggregates>(options: ConnectEngineOptions<A>): Promise<RemoteEngine<A>> {
  return connectEngineWith(options, {})
}

/** `connectEngine` on the given platform pieces (tests pass fake locks, timers and channels). */
export async function connectEngineWith<A extends AggregateDefinitions = NoAggregates>(options: ConnectEngineOptions<A>, platform: ConnectPlatform): Promise<RemoteEngine<A>> {
  checkOptions(options)
  const { name, shared, dedicated } = options
  const locks = platform.locks === undefined ? platformLocks() : platform.locks
  const clock = platform.clock ?? platformClock
  const channel = platform.channel ?? (typeof BroadcastChannel === 'function' ? (channelName: string) => new BroadcastChannel(channelName) : null)
  const sharedWorkers = platform.sharedWorkers ?? typeof SharedWorker === 'function'
  const mode = chooseMode(options.mode ?? 'auto', shared !== undefined && sharedWorkers, locks !== null && channel !== null)
  const tab = randomId()
  let connector: HostConnector
  let owns: (link: HostLink) => boolean = () => false
  if (mode === 'shared') connector = new SharedConnector(shared as SharedWorkerFactory, name, clock)
  else if (mode === 'leader') {
    const { heartbeatMs = 250, staleMs = 1_500 } = options.election ?? {}
    const leader = new LeaderConnector({ name, tab, factory: dedicated, locks: locks as WorkerLocks, clock, channel: (channel as (n: string) => TabChannel)(tabChannelName(name)), heartbeatMs, staleMs, lifecycle: platform.lifecycle === undefined ? platformLifecycle() : platform.lifecycle })
    connector = leader
    owns = (link) => leader.owns(link)
  } else {
    const single = new SingleConnector(dedicated, name, tab)
    connector = single
    owns = (link) => single.owns(link)
  }
  const engine = new MirroredEngine({
    name,
    tab,
    mode,
    config: options.config,
    ...(options.aggregates === undefined ? {} : { aggregates: aggregateIdentities(options.aggregates) }),
    maxQueuedEvents: options.maxQueuedEvents ?? 200_000,
    connector,
    locks,
    clock,
    ownsHost: (link) => owns(link),
    ...(options.claim === undefined ? {} : { claim: options.claim }),
  })
  // The host watches this lock, released when the tab goes away however it goes: held before the first hello.
  const leaving = await holdTabLock(locks, name, tab)
  engine.onConnection((connection) => {
    if (connection.state === 'closed' || connection.state === 'failed') leaving()
  })
  if (locks === null) {
    // Without Web Locks no lock of this tab tells the host that it went away (a SharedWorker
    // would keep serving a closed tab): the page tells it as it goes.
    const unload = platform.unload === undefined ? platformUnload() : platform.unload
    unload?.(() => engine.leave())
  }
  try {
    connector.start(engine)
  } catch (error) {
    // Fails the engine (its connector stops) and lets the tab's lock go.
    engine.failed(`the engine's host could not be reached: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`)
    leaving()
    throw error
  }
  const signal = options.signal
  if (signal !== undefined) {
    const abort = (): void => engine.failed(`gave up waiting for the engine's host: ${String(signal.reason)}`)
    if (signal.aborted) abort()
    else {
      signal.addEventListener('abort', abort, { once: true })
      // The signal gives up waiting for the first host only: once that settled, aborting it changes nothing.
      const off = (): void => signal.removeEventListener('abort', abort)
      engine.ready.then(off, off)
    }
  }
  await engine.ready
  // The mirror holds the host's results as they came; `aggregates` was checked against the host's.
  return engine as unknown as RemoteEngine<A>
}

/** Takes this tab's lock; resolves once it is held, with the function that lets it go. */
function holdTabLock(locks: WorkerLocks | null, name: string, tab: string): Promise<() => void> {
  if (locks === null) return Promise.resolve(() => {})
  return new Promise((held, failed) => {
    let granted = false
    locks
      .request(lockNames.tab(name, tab), {}, () => new Promise<void>((release) => {
        granted = true
        held(release)
      }))
      // Without its lock the host would take this tab for gone at once: connectEngine fails. (Held, it never ends with an error.)
      .catch((error: unknown) => (granted ? reportError(error) : failed(error)))
  })
}

function chooseMode(asked: NonNullable<ConnectEngineOptions['mode']>, shared: boolean, leader: boolean): HostMode {
  if (asked === 'auto') return shared ? 'shared' : leader ? 'leader' : 'single'
  if (asked === 'shared' && !shared) throw new Error("connectEngine: mode 'shared' needs SharedWorker in this browser and the shared option")
  if (asked === 'leader' && !leader) throw new Error("connectEngine: mode 'leader' needs Web Locks (a secure context) and BroadcastChannel")
  return asked
}

function checkOptions(options: ConnectEngineOptions<AggregateDefinitions>): void {
  if (typeof options !== 'object' || options === null) throw new TypeError('connectEngine needs an options object { name, dedicated }')
  assertKnownOptions('connectEngine', options, OPTION_KEYS)
  const { name, shared, dedicated, mode, aggregates, maxQueuedEvents, election, signal } = options
  if (typeof name !== 'string' || name.length === 0 || name.length > 200) throw new TypeError(`connectEngine: name must be a non-empty string of at most 200 characters, got ${String(name)}`)
  if (typeof dedicated !== 'function') throw new TypeError("connectEngine: dedicated must be a function making the host worker: (name) => new Worker(new URL('./tidemark.worker.ts', import.meta.url), { type: 'module', name })")
  if (shared !== undefined && typeof shared !== 'function') throw new TypeError('connectEngine: shared must be a function making the host SharedWorker')
  if (mode !== undefined && !MODES.includes(mode)) throw new RangeError(`connectEngine: mode must be 'auto', 'shared', 'leader' or 'single', got ${String(mode)}`)
  if (maxQueuedEvents !== undefined && !(Number.isSafeInteger(maxQueuedEvents) && maxQueuedEvents >= 1)) {
    throw new RangeError(`connectEngine: maxQueuedEvents must be an integer >= 1, got ${String(maxQueuedEvents)}`)
  }
  if (election !== undefined) {
    if (typeof election !== 'object' || election === null) throw new TypeError('connectEngine: election must be an object { heartbeatMs?, staleMs? }')
    assertKnownOptions('connectEngine: election', election, ['heartbeatMs', 'staleMs'])
    const { heartbeatMs = 250, staleMs = 1_500 } = election
    if (!(Number.isFinite(heartbeatMs) && heartbeatMs > 0)) throw new RangeError(`connectEngine: election.heartbeatMs must be a finite number of ms > 0, got ${String(heartbeatMs)}`)
    if (!(Number.isFinite(staleMs) && staleMs >= 2 * heartbeatMs)) throw new RangeError(`connectEngine: election.staleMs must be at least twice heartbeatMs, got ${String(staleMs)}`)
  }
  if (aggregates !== undefined && (typeof aggregates !== 'object' || aggregates === null || Object.values(aggregates).some((a) => typeof (a as { configuration?: unknown } | null)?.configuration !== 'string'))) {
    throw new TypeError("connectEngine: aggregates must be the host engine's aggregates option (quantiles, distinct, ... by name)")
  }
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('connectEngine: signal must be an AbortSignal')
  if (options.claim !== undefined) checkClaim(options.claim)
  if (options.config !== undefined) {
    try {
      structuredClone(options.config)
    } catch (error) {
      throw new TypeError(`connectEngine: config must be structured-cloneable (it goes to the host's worker): ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`)
    }
  }
}
