import type { AggregateDefinitions, NoAggregates } from '@tidemark/engine'
import { platformClock, platformLocks } from '../page/platform.ts'
import { type BeatMessage, PROTOCOL_VERSION, type StartMessage } from '../protocol/messages.ts'
import { envelope, openEnvelope, tabChannelName } from '../protocol/tabChannel.ts'
import { EngineHost, type HostPlatform } from './engineHost.ts'
import type { ClientLink } from './hostClient.ts'
import { checkHostOptions, type HostContext, type HostEngineOptions } from './hostOptions.ts'

/**
 * The host running in this worker, as `hostEngine` returns it.
 *
 * @example
 * const host: WorkerHost = hostEngine({ name: 'fleet', engine: { windows: tumbling(60_000) } })
 * host.started.then(({ engine, mode }) => console.log(`hosting in ${mode} mode`, engine.stats().applied))
 */
export interface WorkerHost {
  /** Resolves once the engine is open and `setup` ran (rejects with why it could not start). */
  readonly started: Promise<HostContext>
}

interface WorkerScope {
  postMessage(message: unknown, transfer: Transferable[]): void
  addEventListener(type: 'message', listener: (event: MessageEvent) => void): void
  addEventListener(type: 'connect', listener: (event: MessageEvent) => void): void
  close(): void
}

/**
 * Hosts the engine in this worker: call it at the top of the app's worker file, the same file
 * the pages start as a SharedWorker and, where there is none, as a leader tab's dedicated
 * Worker. As a SharedWorker it serves every tab of the origin over their ports; as a dedicated
 * Worker it waits for its tab's start message and, in leader mode, serves the other tabs over
 * the tab channel and beats there, so they notice when it stops. The engine's options, log and
 * providers are the app's: `setup` connects the providers inside the worker (one socket for
 * the origin), and may depend on the first page's `config`.
 *
 * @example
 * // src/tidemark.worker.ts: started by connectEngine in the pages
 * import { tumbling } from '@tidemark/engine'
 * import { hostEngine } from '@tidemark/worker/host'
 * import { bindDoc, connectRelay } from '@tidemark/yjs'
 * import * as Y from 'yjs'
 *
 * hostEngine({
 *   name: 'fleet',
 *   engine: { windows: tumbling(60_000), allowedLateness: 30_000 },
 *   setup({ engine, config }) {
 *     const { relayUrl, tokenUrl, room } = config as { relayUrl: string; tokenUrl: string; room: string }
 *     const doc = new Y.Doc()
 *     bindDoc(engine, doc)
 *     // Called for every join: a fresh token replaces one that reached its exp. A device token
 *     // names the replica it may write: this engine's (kept in the origin's log).
 *     const token = async () => (await (await fetch(`${tokenUrl}?replica=${engine.replica.replicaId}`)).json()).token
 *     const relay = connectRelay({ url: relayUrl, token })
 *     relay.join(doc, room)
 *     return () => relay.destroy()
 *   },
 * })
 */
export function hostEngine<A extends AggregateDefinitions = NoAggregates>(given: HostEngineOptions<A>): WorkerHost {
  // The host passes results on as the engine made them, whatever their aggregates.
  const options = given as unknown as HostEngineOptions
  checkHostOptions(options)
  const scope = globalThis as unknown as WorkerScope
  const platform: HostPlatform = { locks: platformLocks() as HostPlatform['locks'], clock: platformClock }
  if (typeof (globalThis as { SharedWorkerGlobalScope?: unknown }).SharedWorkerGlobalScope === 'function' && 'onconnect' in globalThis) {
    return hostShared(options, scope, platform)
  }
  if (typeof (globalThis as { DedicatedWorkerGlobalScope?: unknown }).DedicatedWorkerGlobalScope === 'function') {
    return hostDedicated(options, scope, platform)
  }
  throw new Error(
    "hostEngine runs in a worker: start this file with new SharedWorker(new URL('./this-file.ts', import.meta.url), { type: 'module' }) (and new Worker(...) where there is no SharedWorker), through connectEngine",
  )
}

function hostShared(options: HostEngineOptions, scope: WorkerScope, platform: HostPlatform): WorkerHost {
  // A SharedWorker whose log was taken ends: its pages connect again and reach a new instance.
  const host = new EngineHost(options, platform, { mode: 'shared', steal: false }, { deposed: () => scope.close() })
  const started = host.start()
  started.catch(() => {})
  scope.addEventListener('connect', (event) => {
    const port = event.ports[0]
    if (port === undefined) return
    const link: ClientLink = { send: (message, transfer) => port.postMessage(message, transfer) }
    port.addEventListener('message', (message) => host.receive(link, message.data))
    port.start()
  })
  return { started }
}

function hostDedicated(options: HostEngineOptions, scope: WorkerScope, platform: HostPlatform): WorkerHost {
  let resolveStarted!: (context: HostContext) => void
  let rejectStarted!: (error: unknown) => void
  const started = new Promise<HostContext>((resolve, reject) => {
    resolveStarted = resolve
    rejectStarted = reject
  })
  started.catch(() => {})
  const own: ClientLink = { send: (message, transfer) => scope.postMessage(message, transfer) }
  let host: EngineHost | null = null
  scope.addEventListener('message', (event) => {
    if (host !== null) {
      host.receive(own, event.data)
      return
    }
    const start = event.data as Partial<StartMessage> | null
    if (start?.t !== 'start') return
    if (start.v !== PROTOCOL_VERSION) {
      own.send({ t: 'refused', reason: `this host speaks protocol ${PROTOCOL_VERSION}, the page ${String(start.v)}: reload the page` }, [])
      return
    }
    host = start.mode === 'leader' ? leaderHost(options, platform, start as StartMessage) : new EngineHost(options, platform, { mode: 'single', steal: false })
    host.start().then(resolveStarted, rejectStarted)
  })
  return { started }
}

/** A leader tab's host: it also serves the follower tabs over the tab channel, and beats there. */
function leaderHost(options: HostEngineOptions, platform: HostPlatform, start: StartMessage): EngineHost {
  const channel = new BroadcastChannel(tabChannelName(options.name))
  const followers = new Map<string, ClientLink>()
  const links = new Map<ClientLink, string>()
  let beats: ReturnType<typeof setInterval> | null = null
  const stopBeats = (): void => {
    if (beats !== null) clearInterval(beats)
    beats = null
  }
  const host: EngineHost = new EngineHost(
    options,
    platform,
    { mode: 'leader', steal: start.steal },
    {
      claimed(epoch) {
        const beat = (): void => {
          const message: BeatMessage = { t: 'beat', epoch, instance: host.instance, tab: start.tab, ready: host.ready }
          channel.postMessage(envelope('*', 'host', epoch, message))
        }
        beat()
        beats = setInterval(beat, start.heartbeatMs)
      },
      ready() {
        channel.postMessage(envelope('*', 'host', host.epoch, { t: 'beat', epoch: host.epoch, instance: host.instance, tab: start.tab, ready: true }))
      },
      deposed: stopBeats,
      dropped(link) {
        const tab = links.get(link)
        if (tab === undefined) return
        links.delete(link)
        followers.delete(tab)
      },
    },
  )
  channel.addEventListener('message', (event) => {
    const message = openEnvelope(event.data)
    if (message === null || message.to !== 'host' || message.epoch !== host.epoch || host.epoch === 0) return
    let link = followers.get(message.from)
    if (link === undefined) {
      const tab = message.from
      link = { send: (m) => channel.postMessage(envelope(tab, 'host', host.epoch, m)) }
      followers.set(tab, link)
      links.set(link, tab)
    }
    host.receive(link, message.m)
  })
  return host
}
