import type { BeatMessage, StealMessage } from '../protocol/messages.ts'
import { envelope, openEnvelope } from '../protocol/tabChannel.ts'
import type { HostConnector, HostLink, LinkSink } from './hostLink.ts'
import { type DedicatedWorkerFactory, startHostWorker } from './hostWorker.ts'
import { LeaderElection } from './leaderElection.ts'
import type { PageLifecycle, TabChannel, WorkerClock, WorkerLocks } from './platform.ts'

/**
 * Options of a `LeaderConnector`.
 *
 * @example
 * new LeaderConnector({ name: 'fleet', tab, factory, locks: navigator.locks, clock: platformClock, channel: new BroadcastChannel('tidemark-worker:fleet'), heartbeatMs: 250, staleMs: 1_500 })
 */
export interface LeaderConnectorOptions {
  readonly name: string
  readonly tab: string
  readonly factory: DedicatedWorkerFactory
  readonly locks: WorkerLocks
  readonly clock: WorkerClock
  readonly channel: TabChannel
  readonly heartbeatMs: number
  readonly staleMs: number
  /** The page's lifecycle (`platformLifecycle()`): a leader that freezes hands over to a waiting tab at once. Null: none to follow. */
  readonly lifecycle?: PageLifecycle | null
}

/**
 * Leader mode, where there is no SharedWorker: the tab that wins the election runs the host in
 * a dedicated worker and talks to it through its port; the other tabs talk to it over the tab
 * channel, addressed by the host's epoch. When a newer host announces itself ready, a follower
 * moves to it (and sends again what its old host had not made durable). A leader that is
 * deposed, or hands over as its page freezes, ends its worker and becomes a follower.
 */
export class LeaderConnector implements HostConnector {
  readonly #options: LeaderConnectorOptions
  readonly #election: LeaderElection
  #sink: LinkSink | null = null
  /** This tab's own host worker, while it leads. */
  #own: HostLink | null = null
  /** The link to another tab's host, with that host's epoch. */
  #follower: { readonly link: HostLink; readonly epoch: number } | null = null
  /** The newest host epoch this tab connected to. */
  #connectedEpoch = 0

  constructor(options: LeaderConnectorOptions) {
    this.#options = options
    const { name, tab, locks, clock, heartbeatMs, staleMs, channel } = options
    this.#election = new LeaderElection({
      name,
      tab,
      locks,
      clock,
      heartbeatMs,
      staleMs,
      lead: (stolen) => this.#lead(stolen),
      deposed: (reason) => this.#deposed(reason),
      announceSteal: (epoch) => {
        const message: StealMessage = { t: 'steal', epoch, tab }
        channel.postMessage(envelope('*', tab, epoch, message))
      },
    })
  }

  /** Whether `link` is this tab's own host worker. */
  owns(link: HostLink): boolean {
    return link === this.#own
  }

  get election(): LeaderElection {
    return this.#election
  }

  start(sink: LinkSink): void {
    this.#sink = sink
    this.#options.channel.addEventListener('message', (event) => this.#heard(event.data))
    const lifecycle = this.#options.lifecycle
    if (lifecycle != null) {
      const election = this.#election
      lifecycle.on('freeze', () => election.freeze())
      lifecycle.on('resume', () => election.resume())
      lifecycle.on('visibilitychange', () => election.hidden(lifecycle.hidden()))
      election.hidden(lifecycle.hidden())
    }
    this.#election.start()
  }

  gone(link: HostLink): void {
    const sink = this.#sink
    if (sink === null) return
    if (link === this.#own && this.#election.role === 'leader') {
      // This tab still leads but its worker died: start another (the log's lock went with the old one).
      link.close()
      this.#own = null
      this.#startWorker(false, sink)
    } else if (link === this.#follower?.link) this.#follower = null
  }

  stop(): void {
    this.#sink = null
    this.#election.stop()
    this.#own?.close()
    this.#own = null
    this.#follower = null
    this.#options.channel.close()
  }

  #heard(data: unknown): void {
    const message = openEnvelope(data)
    const sink = this.#sink
    if (message === null || sink === null) return
    const m = message.m
    if (m.t === 'beat' && message.from === 'host') {
      this.#beat(m as BeatMessage, sink)
      return
    }
    if (m.t === 'steal') {
      this.#election.stolen((m as StealMessage).epoch)
      return
    }
    const follower = this.#follower
    if (message.to === this.#options.tab && message.from === 'host' && follower !== null && message.epoch === follower.epoch) sink.message(follower.link, m)
  }

  #beat(beat: BeatMessage, sink: LinkSink): void {
    // A leader hearing a host newer than its own steps down here (deposed ends its worker).
    this.#election.beat(beat.epoch, beat.tab === this.#options.tab)
    if (beat.tab === this.#options.tab) this.#connectedEpoch = Math.max(this.#connectedEpoch, beat.epoch)
    if (this.#own !== null || !beat.ready || beat.epoch <= this.#connectedEpoch) return
    // A newer host is ready: move to it.
    this.#connectedEpoch = beat.epoch
    const { channel, tab } = this.#options
    const epoch = beat.epoch
    const link: HostLink = { send: (m) => channel.postMessage(envelope('host', tab, epoch, m)), close: () => {} }
    this.#follower = { link, epoch }
    sink.opened(link)
  }

  #lead(stolen: boolean): void {
    const sink = this.#sink
    if (sink === null) return
    this.#follower = null
    this.#startWorker(stolen, sink)
  }

  /**
   * Starts this tab's host worker. A factory that throws (or a first message that cannot be
   * sent) can never serve: the page fails with the reason and this tab leaves the election,
   * letting leadership go, rather than taking it again and again.
   */
  #startWorker(stolen: boolean, sink: LinkSink): void {
    const { factory, name, tab, heartbeatMs } = this.#options
    try {
      this.#own = startHostWorker(factory, name, { mode: 'leader', tab, steal: stolen, heartbeatMs }, sink)
    } catch (error) {
      this.stop()
      sink.failed(`the host worker could not be started: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)} (check connectEngine({ dedicated }))`)
    }
  }

  #deposed(reason: string): void {
    const own = this.#own
    this.#own = null
    if (own === null) return
    own.close()
    this.#sink?.lost(own, reason)
  }
}
