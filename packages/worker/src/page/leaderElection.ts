import { isAbortError, reportError } from '../common/reportError.ts'
import { lockNames, type WorkerClock, type WorkerLocks } from './platform.ts'

/**
 * Options of a `LeaderElection`.
 *
 * @example
 * new LeaderElection({ name: 'fleet', tab, locks: navigator.locks, clock: platformClock, heartbeatMs: 250, staleMs: 1_500, lead, deposed, announceSteal })
 */
export interface LeaderElectionOptions {
  /** The engine name; the election's lock names derive from it. */
  readonly name: string
  /** This tab's id. */
  readonly tab: string
  readonly locks: WorkerLocks
  readonly clock: WorkerClock
  /** How often the leader's host beats (the watchdog looks twice as often). */
  readonly heartbeatMs: number
  /** A leader silent this long (with this tab's own timers on time) is stolen from. */
  readonly staleMs: number
  /** This tab holds leadership now; `stolen` when it took it from a silent leader. */
  readonly lead: (stolen: boolean) => void
  /** Leadership left this tab, for `reason`: another tab stole it (this one was frozen or hung), or this tab handed it over as it froze. */
  readonly deposed: (reason: string) => void
  /** Tells the other tabs that this tab stole leadership from the leader of `epoch`. */
  readonly announceSteal: (epoch: number) => void
}

/** Where a tab stands. */
export type ElectionRole = 'follower' | 'leader' | 'stopped'

/**
 * Leader election among the tabs of an origin where there is no SharedWorker. Every tab
 * queues for one exclusive Web Lock; the holder leads (it runs the engine's host in a worker).
 * A lock alone is not enough: a frozen tab keeps its locks, and its worker freezes with it.
 * So the leader's host beats on the tab channel; a follower that hears no beat of the newest
 * epoch for `staleMs` steals the lock, but only when its own watchdog ran on time (a follower
 * that was asleep itself knows nothing), only while holding a second lock that one stealer at
 * a time can hold, and only once per epoch (other tabs hear the steal and hold off, until
 * four times `staleMs` passed without a beat of a newer epoch). The stolen-from tab learns it
 * when it runs again, from whichever comes first: its lock request failing, or a beat of a host
 * newer than its own (a host that took the log after its own did). It steps down; its host's
 * writes are refused by the log's epoch fence.
 *
 * Where the page says it is freezing (the `freeze` event, `freeze()` here), no one has to wait:
 * a hidden leader asks the locks whether tabs are queued behind it, and if so, hands leadership
 * over as it freezes (its host ends, its lock is released), so the next tab takes over as when
 * a leader closes. A frozen follower leaves the queue. Both queue again on `resume()`.
 */
export class LeaderElection {
  readonly #options: LeaderElectionOptions
  #role: ElectionRole = 'follower'
  /** Newest host epoch heard (0: none yet). */
  #epoch = 0
  #lastBeatAt = 0
  /** The epoch of this tab's own host while it leads, from its beats (0: it has not beaten yet). */
  #ownEpoch = 0
  /** Counts this tab's holds of the leader lock: news of an old hold changes nothing. */
  #holds = 0
  #lastTick = 0
  /** The last steal from the leader of `epoch`, by this tab or another. */
  #lastSteal: { readonly epoch: number; readonly at: number } | null = null
  #stealing = false
  #queued: AbortController | null = null
  #release: (() => void) | null = null
  #watchdog: unknown = null
  #newerBeat: ((epoch: number) => void)[] = []
  /** Between `freeze()` and `resume()`. */
  #frozen = false
  #hidden = false
  /** Whether other tabs were queued for leadership when the locks were last asked (while leading hidden). */
  #othersWaiting = false
  #askedAt = Number.NEGATIVE_INFINITY
  #asking = false

  constructor(options: LeaderElectionOptions) {
    this.#options = options
  }

  get role(): ElectionRole {
    return this.#role
  }

  /** The newest host epoch this tab heard. */
  get epoch(): number {
    return this.#epoch
  }

  /** Queues for leadership and starts watching the leader's beats. */
  start(): void {
    const { clock, heartbeatMs } = this.#options
    const now = clock.now()
    this.#lastBeatAt = now
    this.#lastTick = now
    this.#queue()
    this.#watchdog = clock.setInterval(() => this.#watch(), Math.max(50, Math.floor(heartbeatMs / 2)))
  }

  /**
   * A beat of the host of `epoch` was heard; `own` when it is this tab's own host. A leader that
   * hears another host newer than its own was stolen from and steps down at once.
   */
  beat(epoch: number, own = false): void {
    if (own && this.#role === 'leader') this.#ownEpoch = Math.max(this.#ownEpoch, epoch)
    else if (!own && this.#role === 'leader' && this.#ownEpoch > 0 && epoch > this.#ownEpoch) this.#stepDown('another tab took over as leader')
    if (epoch < this.#epoch) return
    this.#epoch = epoch
    this.#lastBeatAt = this.#options.clock.now()
    const waiting = this.#newerBeat
    this.#newerBeat = []
    for (const notify of waiting) notify(epoch)
  }

  /** Another tab stole leadership from the leader of `epoch`: give it time to start. */
  stolen(epoch: number): void {
    const now = this.#options.clock.now()
    this.#lastSteal = { epoch, at: now }
    this.#lastBeatAt = now
  }

  /** The page was hidden or shown: a hidden leader may be frozen, so it keeps asking who waits behind it. */
  hidden(hidden: boolean): void {
    this.#hidden = hidden
    if (hidden && this.#role === 'leader') this.#askWhoWaits()
  }

  /**
   * The page is about to freeze. A leader with tabs queued behind it hands leadership over now
   * (a frozen leader would hold it, silent, until a follower steals it after `staleMs`); alone,
   * it keeps it and its host. A follower leaves the queue: a lock granted to a frozen tab would
   * sit unused. Both queue again on `resume()`.
   */
  freeze(): void {
    if (this.#role === 'stopped' || this.#frozen) return
    this.#frozen = true
    if (this.#role === 'leader') {
      if (this.#othersWaiting) this.#stepDown('this tab froze and handed leadership to a tab waiting for it', false)
      return
    }
    this.#queued?.abort()
    this.#queued = null
  }

  /** The page runs again after `freeze()`: a tab that left the queue joins it again; what it heard before is stale. */
  resume(): void {
    if (!this.#frozen) return
    this.#frozen = false
    const now = this.#options.clock.now()
    this.#lastTick = now
    this.#lastBeatAt = now
    if (this.#role === 'follower' && this.#queued === null && !this.#stealing) this.#queue()
  }

  /** Asks the locks whether tabs are queued for leadership (what `freeze()` decides by). */
  #askWhoWaits(): void {
    const { locks, name, clock } = this.#options
    if (this.#asking) return
    this.#askedAt = clock.now()
    if (locks.query === undefined) {
      // No way to know: handing over is always safe, it only costs this tab a new host when it resumes.
      this.#othersWaiting = true
      return
    }
    this.#asking = true
    const leader = lockNames.leader(name)
    locks
      .query()
      .then(
        (state) => {
          this.#othersWaiting = (state.pending ?? []).some((lock) => lock.name === leader)
        },
        () => {
          // As above: unknown, so hand over.
          this.#othersWaiting = true
        },
      )
      .finally(() => {
        this.#asking = false
      })
  }

  /** Leaves the election, letting leadership go if this tab holds it. */
  stop(): void {
    if (this.#role === 'stopped') return
    this.#role = 'stopped'
    this.#options.clock.clearInterval(this.#watchdog)
    this.#queued?.abort()
    this.#release?.()
    this.#release = null
  }

  #queue(): void {
    const controller = new AbortController()
    this.#queued = controller
    this.#hold({ signal: controller.signal }, false, controller)
  }

  /** Requests the leader lock; holds it until `stop()` or until another tab steals it. */
  #hold(options: { readonly signal?: AbortSignal; readonly steal?: boolean }, stolen: boolean, controller: AbortController | null): void {
    const { locks, name } = this.#options
    let held = false
    const hold = ++this.#holds
    locks
      .request(lockNames.leader(name), options, () => {
        if (this.#role === 'stopped') return undefined
        held = true
        this.#role = 'leader'
        this.#ownEpoch = 0
        this.#queued = null
        const kept = new Promise<void>((resolve) => {
          this.#release = resolve
        })
        try {
          this.#options.lead(stolen)
        } catch (error) {
          // This tab cannot lead (its host cannot start): it leaves the election and lets the
          // lock go, rather than stepping down and queueing to be granted the lock again at once.
          this.stop()
          reportError(error)
        }
        return kept
      })
      .then(
        () => {},
        (error: unknown) => {
          if (!held) {
            // Our own withdrawal of a queued request (stop, freeze, a steal) is expected; any other failure is not.
            if (controller?.signal.aborted !== true || !isAbortError(error)) reportError(error)
            return
          }
          // A held lock ends with an AbortError when another tab stole it; anything else is reported too.
          if (!isAbortError(error)) reportError(error)
          if (hold !== this.#holds || this.#role !== 'leader') return
          this.#stepDown('another tab took over as leader')
        },
      )
  }

  /** Leadership left this tab (taken, or handed over as it froze): it follows, and queues again unless frozen. */
  #stepDown(reason: string, queue = true): void {
    this.#role = 'follower'
    const release = this.#release
    this.#release = null
    // A stolen lock is gone already; resolving its callback's promise changes nothing else.
    release?.()
    this.#lastBeatAt = this.#options.clock.now()
    this.#options.deposed(reason)
    if (queue) this.#queue()
  }

  #watch(): void {
    const { clock, staleMs } = this.#options
    const now = clock.now()
    // This tab's own timers ran late (it was frozen or throttled): what it heard is stale, not the leader.
    const late = now - this.#lastTick > staleMs / 2
    this.#lastTick = now
    // Hidden, a page's timers run about once a second: so does the question, at most every beat.
    if (this.#role === 'leader' && this.#hidden && now - this.#askedAt >= this.#options.heartbeatMs) this.#askWhoWaits()
    if (late || this.#role !== 'follower' || this.#stealing || !this.#leaderSilent(now)) return
    this.#steal()
  }

  #leaderSilent(now: number): boolean {
    const { staleMs } = this.#options
    if (now - this.#lastBeatAt < staleMs) return false
    const steal = this.#lastSteal
    // At most one steal per epoch, unless the stealer's host never beat.
    return steal === null || steal.epoch < this.#epoch || now - steal.at >= staleMs * 4
  }

  #steal(): void {
    const { locks, name, clock, staleMs } = this.#options
    this.#stealing = true
    // A stealer that went silent itself may still hold the steal lock: past the grace, take it.
    const last = this.#lastSteal
    const overdue = last !== null && last.epoch >= this.#epoch && clock.now() - last.at >= staleMs * 4
    locks
      .request(lockNames.steal(name), overdue ? { steal: true } : { ifAvailable: true }, async (lock) => {
        if (lock === null || this.#role !== 'follower' || !this.#leaderSilent(clock.now())) return
        const from = this.#epoch
        this.#lastSteal = { epoch: from, at: clock.now() }
        this.#options.announceSteal(from)
        this.#queued?.abort()
        this.#queued = null
        this.#hold({ steal: true }, true, null)
        // Kept until this tab's host beats (or for a bound): no second tab steals meanwhile.
        await this.#beatAfter(from, staleMs * 4)
      })
      .then(
        () => {},
        (error: unknown) => {
          // Expected: a stealer overdue past four times staleMs broke this tab's steal lock (steal: true), by design.
          if (!isAbortError(error)) reportError(error)
        },
      )
      .finally(() => {
        this.#stealing = false
      })
  }

  /** Resolves at the first beat of an epoch newer than `epoch`, or after `ms`. */
  #beatAfter(epoch: number, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const { clock } = this.#options
      const timer = clock.setTimeout(resolve, ms)
      const notify = (heard: number): void => {
        if (heard <= epoch) {
          this.#newerBeat.push(notify)
          return
        }
        clock.clearTimeout(timer)
        resolve()
      }
      this.#newerBeat.push(notify)
    })
  }
}
