import { describe, expect, it } from 'vitest'
import { LeaderElection } from '../src/page/leaderElection.ts'
import { FakeLockManager } from './fakeLocks.ts'
import { FakeTime, settle } from './fakeTimers.ts'

const HEARTBEAT_MS = 250
const STALE_MS = 1_500

interface Tab {
  readonly id: string
  readonly election: LeaderElection
  /** Leaderships this tab took: `queue` or `steal`, with the time. */
  readonly leads: { readonly via: 'queue' | 'steal'; readonly at: number }[]
  readonly deposedAt: number[]
  frozen: boolean
  /** Messages (and lock news) that reach a frozen tab wait here until it thaws. */
  readonly waiting: (() => void)[]
  worker: { readonly epoch: number; readonly context: string } | null
}

/**
 * Tabs of one origin running the election over fake locks and timers. A leader "starts its
 * worker": a context of its own that takes the next epoch (as claimLog does) and beats every
 * 250 ms to every tab. Freezing a tab freezes its timers and its worker's, holds its locks, and
 * holds what reaches it (beats, steals, the news that its lock was stolen) until it thaws.
 */
class Origin {
  readonly time = new FakeTime()
  readonly locks = new FakeLockManager()
  readonly tabs: Tab[] = []
  #epoch = 0
  readonly steals: { readonly tab: string; readonly epoch: number; readonly at: number }[] = []
  /** Freeze a tab the moment it announces a steal, before its host can beat. */
  freezeStealers = false

  open(id: string): Tab {
    const tab: Tab = { id, election: null as unknown as LeaderElection, leads: [], deposedAt: [], frozen: false, waiting: [], worker: null }
    // The news that its lock was stolen reaches a frozen tab only when it thaws.
    const inTab = (run: () => void): void => {
      if (tab.frozen) tab.waiting.push(run)
      else run()
    }
    ;(tab as { election: LeaderElection }).election = new LeaderElection({
      name: 'fleet',
      tab: id,
      locks: this.locks.as(id),
      clock: this.time.clock(id),
      heartbeatMs: HEARTBEAT_MS,
      staleMs: STALE_MS,
      lead: (stolen) => {
        tab.leads.push({ via: stolen ? 'steal' : 'queue', at: this.time.now })
        this.#startWorker(tab)
      },
      deposed: () =>
        inTab(() => {
          tab.deposedAt.push(this.time.now)
          if (tab.worker !== null) this.time.end(tab.worker.context)
          tab.worker = null
        }),
      announceSteal: (epoch) => {
        this.steals.push({ tab: id, epoch, at: this.time.now })
        if (this.freezeStealers) this.freeze(tab)
        for (const other of this.tabs) if (other !== tab) this.#deliver(other, () => other.election.stolen(epoch))
      },
    })
    this.tabs.push(tab)
    tab.election.start()
    return tab
  }

  /** Closes or crashes a tab: its timers, worker and locks end. */
  close(tab: Tab): void {
    this.time.end(tab.id)
    if (tab.worker !== null) this.time.end(tab.worker.context)
    tab.worker = null
    this.locks.crash(tab.id)
    this.tabs.splice(this.tabs.indexOf(tab), 1)
  }

  freeze(tab: Tab): void {
    tab.frozen = true
    this.locks.freeze(tab.id, true)
    this.time.freeze(tab.id, true)
    if (tab.worker !== null) this.time.freeze(tab.worker.context, true)
  }

  /**
   * Thaws a tab: by default its overdue timers run first and what reached it meanwhile only
   * after the promise callbacks those timers started have run (a lock request included). With
   * `lockNews: 'withheld'` the news of its locks stays held until `releaseLockNews(tab)`.
   */
  async thaw(tab: Tab, order: 'timers-first' | 'messages-first' = 'timers-first', lockNews: 'delivered' | 'withheld' = 'delivered'): Promise<void> {
    tab.frozen = false
    const deliver = (): void => {
      if (lockNews === 'delivered') this.locks.freeze(tab.id, false)
      for (const run of tab.waiting.splice(0)) run()
    }
    if (order === 'messages-first') deliver()
    this.time.freeze(tab.id, false)
    if (tab.worker !== null) this.time.freeze(tab.worker.context, false)
    if (order === 'timers-first') {
      await settle()
      await settle()
      deliver()
    }
  }

  /** The page's `freeze` event, then the freeze itself: what a browser does to a hidden tab it freezes. */
  freezeSaying(tab: Tab): void {
    tab.election.freeze()
    this.freeze(tab)
  }

  /** Thaws a tab that froze saying so, then its `resume` event. */
  async resume(tab: Tab): Promise<void> {
    await this.thaw(tab)
    tab.election.resume()
  }

  releaseLockNews(tab: Tab): void {
    this.locks.freeze(tab.id, false)
  }

  leaders(): string[] {
    return this.tabs.filter((t) => t.election.role === 'leader').map((t) => t.id)
  }

  #deliver(tab: Tab, run: () => void): void {
    if (tab.frozen) tab.waiting.push(run)
    else run()
  }

  #startWorker(tab: Tab): void {
    const epoch = ++this.#epoch
    const context = `${tab.id}-worker-${epoch}`
    tab.worker = { epoch, context }
    const beat = (): void => {
      for (const other of this.tabs) this.#deliver(other, () => other.election.beat(epoch, other === tab))
    }
    this.time.clock(context).setInterval(beat, HEARTBEAT_MS)
    if (tab.frozen) {
      this.time.freeze(context, true)
      tab.waiting.push(beat)
    } else beat()
  }
}

describe('leader election', () => {
  it('lets the first tab lead while its host beats; the others follow without stealing', async () => {
    const origin = new Origin()
    const a = origin.open('a')
    await settle()
    origin.open('b')
    origin.open('c')
    await origin.time.run(10_000)
    expect(origin.leaders()).toEqual(['a'])
    expect(a.leads.map((l) => l.via)).toEqual(['queue'])
    expect(origin.steals).toEqual([])
  })

  it('hands leadership to a queued tab as soon as the leader closes, without a steal', async () => {
    const origin = new Origin()
    const a = origin.open('a')
    await settle()
    const b = origin.open('b')
    await origin.time.run(2_000)
    const closedAt = origin.time.now
    origin.close(a)
    await origin.time.run(100)
    expect(origin.leaders()).toEqual(['b'])
    expect(b.leads.map((l) => l.via)).toEqual(['queue'])
    // At once: within the first 10 ms step of the fake time.
    expect((b.leads[0]?.at ?? 0) - closedAt).toBeLessThanOrEqual(10)
    expect(origin.steals).toEqual([])
  })

  it('steals from a frozen leader after staleMs of silence, and the thawed leader steps down', async () => {
    const origin = new Origin()
    const a = origin.open('a')
    await settle()
    const b = origin.open('b')
    const c = origin.open('c')
    await origin.time.run(2_000)
    const frozenAt = origin.time.now
    origin.freeze(a)
    await origin.time.run(3_000)
    const [stealer, ...others] = [b, c].sort((x, y) => y.leads.length - x.leads.length)
    expect(stealer?.leads.map((l) => l.via)).toEqual(['steal'])
    expect(others.map((t) => t.leads.length)).toEqual([0])
    const tookOverAfter = (stealer?.leads[0]?.at ?? 0) - frozenAt
    expect(tookOverAfter).toBeGreaterThanOrEqual(STALE_MS)
    expect(tookOverAfter).toBeLessThanOrEqual(STALE_MS + HEARTBEAT_MS)
    expect(origin.steals).toHaveLength(1)
    expect(a.deposedAt).toEqual([])
    await origin.thaw(a)
    await origin.time.run(2_000)
    expect(a.deposedAt).toHaveLength(1)
    expect(a.election.role).toBe('follower')
    expect(origin.leaders()).toEqual([stealer?.id])
  })

  it('steps a thawed leader down at the first beat of a newer host, before the news of its stolen lock arrives', async () => {
    const origin = new Origin()
    const a = origin.open('a')
    await settle()
    const b = origin.open('b')
    await origin.time.run(2_000)
    origin.freeze(a)
    await origin.time.run(3_000)
    expect(b.leads.map((l) => l.via)).toEqual(['steal'])
    await origin.thaw(a, 'timers-first', 'withheld')
    await origin.time.run(HEARTBEAT_MS * 2)
    // The new host's beats told it: it follows, its worker ended, and it queues again.
    expect(a.election.role).toBe('follower')
    expect(a.deposedAt).toHaveLength(1)
    expect(a.worker).toBeNull()
    origin.releaseLockNews(a)
    await origin.time.run(2_000)
    // The late news of the stolen lock changes nothing.
    expect(a.deposedAt).toHaveLength(1)
    expect(origin.leaders()).toEqual(['b'])
    // When the new leader closes, the thawed tab's fresh request is next.
    origin.close(b)
    await origin.time.run(100)
    expect(origin.leaders()).toEqual(['a'])
    expect(a.leads.map((l) => l.via)).toEqual(['queue', 'queue'])
  })

  it('does not steal from a live leader when its own timers ran late (the follower itself was frozen)', async () => {
    const origin = new Origin()
    origin.open('a')
    await settle()
    const b = origin.open('b')
    await origin.time.run(2_000)
    origin.freeze(b)
    await origin.time.run(5_000)
    // The worst order: the watchdog runs before the beats that queued up meanwhile are delivered.
    await origin.thaw(b, 'timers-first')
    await origin.time.run(5_000)
    expect(origin.leaders()).toEqual(['a'])
    expect(origin.steals).toEqual([])
  })

  it('steals at most once per epoch: a stealer that goes silent too is stolen from only after four times staleMs', async () => {
    const origin = new Origin()
    const a = origin.open('a')
    await settle()
    const b = origin.open('b')
    const c = origin.open('c')
    await origin.time.run(2_000)
    // The stealer freezes before its host ever beats: the other follower waits out the grace.
    origin.freezeStealers = true
    origin.freeze(a)
    await origin.time.run(1_800)
    origin.freezeStealers = false
    const stealer = b.leads.length > 0 ? b : c
    const other = stealer === b ? c : b
    expect(stealer.leads.map((l) => l.via)).toEqual(['steal'])
    const stolenAt = origin.steals[0]?.at ?? 0
    await origin.time.run(STALE_MS * 4 + 1_000)
    expect(origin.steals.map((s) => s.tab)).toEqual([stealer.id, other.id])
    expect((origin.steals[1]?.at ?? 0) - stolenAt).toBeGreaterThanOrEqual(STALE_MS * 4)
    // The two frozen tabs still believe they lead; thawed, both learn they do not.
    expect(origin.leaders().sort()).toEqual(['a', 'b', 'c'])
    await origin.thaw(a)
    await origin.thaw(stealer)
    await origin.time.run(2_000)
    expect(origin.leaders()).toEqual([other.id])
  })

  it('a hidden leader that freezes saying so hands over at once to a waiting tab, and follows when it resumes', async () => {
    const origin = new Origin()
    const a = origin.open('a')
    await settle()
    const b = origin.open('b')
    const c = origin.open('c')
    await origin.time.run(2_000)
    a.election.hidden(true)
    await settle()
    const frozenAt = origin.time.now
    origin.freezeSaying(a)
    // Its host ended as it froze, and the queue's next tab leads, as when a leader closes: no steal, no silence waited out.
    expect(a.worker).toBe(null)
    expect(a.deposedAt).toEqual([frozenAt])
    await origin.time.run(100)
    expect(origin.leaders()).toEqual(['b'])
    expect(b.leads.map((l) => l.via)).toEqual(['queue'])
    expect((b.leads[0]?.at ?? 0) - frozenAt).toBeLessThanOrEqual(10)
    await origin.time.run(5_000)
    expect(origin.steals).toEqual([])
    await origin.resume(a)
    await origin.time.run(2_000)
    expect([a.election.role, b.election.role, c.election.role]).toEqual(['follower', 'leader', 'follower'])
    expect(a.leads).toHaveLength(1)
    // a queued again behind c: when b and then c close, a leads.
    origin.close(b)
    await origin.time.run(100)
    origin.close(c)
    await origin.time.run(100)
    expect(origin.leaders()).toEqual(['a'])
  })

  it('a lone leader keeps leadership and its host through a freeze it was told of', async () => {
    const origin = new Origin()
    const a = origin.open('a')
    await origin.time.run(1_000)
    a.election.hidden(true)
    await settle()
    const worker = a.worker
    origin.freezeSaying(a)
    await origin.time.run(5_000)
    await origin.resume(a)
    await origin.time.run(2_000)
    expect(origin.leaders()).toEqual(['a'])
    expect(a.worker).toBe(worker)
    expect(a.deposedAt).toEqual([])
  })

  it('a visible leader asks no one and hands nothing over; a tab that freezes without saying so is stolen from as before', async () => {
    const origin = new Origin()
    const a = origin.open('a')
    await settle()
    const b = origin.open('b')
    await origin.time.run(2_000)
    // Never told it was hidden, so it never asked who waits (a visible page is not frozen).
    origin.freezeSaying(a)
    await origin.time.run(3_000)
    expect(b.leads.map((l) => l.via)).toEqual(['steal'])
    expect(origin.steals).toHaveLength(1)
  })

  it('a follower that freezes leaves the queue: leadership goes to a running tab, and the follower queues again when it resumes', async () => {
    const origin = new Origin()
    const a = origin.open('a')
    await settle()
    const b = origin.open('b')
    await settle()
    const c = origin.open('c')
    await origin.time.run(1_000)
    // b is next in the queue; frozen, it must not be handed a leadership it cannot take up.
    origin.freezeSaying(b)
    origin.close(a)
    await origin.time.run(100)
    expect(origin.leaders()).toEqual(['c'])
    await origin.resume(b)
    await origin.time.run(2_000)
    expect(origin.leaders()).toEqual(['c'])
    origin.close(c)
    await origin.time.run(100)
    expect(origin.leaders()).toEqual(['b'])
    expect(origin.steals).toEqual([])
  })

  it('lets go of leadership on stop(), and the next tab leads', async () => {
    const origin = new Origin()
    const a = origin.open('a')
    await settle()
    const b = origin.open('b')
    await origin.time.run(1_000)
    a.election.stop()
    await origin.time.run(100)
    expect([a.election.role, b.election.role]).toEqual(['stopped', 'leader'])
    expect(b.leads.map((l) => l.via)).toEqual(['queue'])
  })
})
