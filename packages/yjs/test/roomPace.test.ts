/**
 * A relay room's pace on its own, on a fake clock: senders take turns, a turn of several messages
 * waits for a token for each (a full bucket when it takes more than the burst, the next turn
 * then waiting for what it spent), and a withdrawn turn leaves no timer behind.
 */
import { describe, expect, it } from 'vitest'
import { type PacedTurn, RoomPace } from '../src/relay/roomPace.ts'

/** A clock at 0 that moves when the test says, with the timers the pace sets. */
function fakeClock(updatesPerSecond: number) {
  const timers = new Map<number, { readonly at: number; readonly run: () => void }>()
  let next = 1
  const clock = {
    at: 0,
    updatesPerSecond,
    now: () => clock.at,
    schedule: (run: () => void, ms: number): unknown => {
      timers.set(next, { at: clock.at + ms, run })
      return next++
    },
    cancel: (handle: unknown): void => {
      timers.delete(handle as number)
    },
    /** Delays of the timers waiting now, from the clock's time. */
    delays: (): number[] => [...timers.values()].map((timer) => timer.at - clock.at),
    /** Moves the clock by `ms`, running the timers that fall due. */
    advance(ms: number): void {
      clock.at += ms
      for (const [id, timer] of [...timers]) {
        if (timer.at > clock.at) continue
        timers.delete(id)
        timer.run()
      }
    },
  }
  return clock
}

/** A sender that always has `messages` more to send, asking again after each turn; `log` gets its name per turn. */
function busySender(pace: RoomPace, name: string, log: string[], messages = 1): PacedTurn {
  const turn: PacedTurn = (take) => {
    if (!take(messages)) return
    log.push(name)
    pace.request(turn)
  }
  return turn
}

const microtasks = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

describe('RoomPace', () => {
  it('gives two busy senders turns in alternation: neither starves the other', async () => {
    const clock = fakeClock(5)
    const pace = new RoomPace(clock)
    const log: string[] = []
    pace.request(busySender(pace, 'updates', log))
    pace.request(busySender(pace, 'presence', log))
    await microtasks()
    // The burst: 10 tokens, 5 each.
    expect(log).toEqual(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? 'updates' : 'presence')))
    expect(clock.delays()).toEqual([200])
    clock.advance(400)
    expect(log.slice(10)).toEqual(['updates', 'presence'])
  })

  it('runs a turn of more messages than the burst once the bucket is full, and the next turn waits for what it spent', async () => {
    const clock = fakeClock(5)
    const pace = new RoomPace(clock)
    const log: string[] = []
    pace.request((take) => {
      if (take(3)) log.push('three')
    })
    await microtasks()
    // 7 of 10 left: a turn of 25 messages waits until the bucket is full again.
    const big: PacedTurn = (take) => {
      if (take(25)) log.push('twenty-five')
    }
    pace.request(big)
    pace.request((take) => {
      if (take(1)) log.push('one')
    })
    await microtasks()
    expect(log).toEqual(['three'])
    expect(clock.delays()).toEqual([600])
    clock.advance(600)
    // 10 - 25: the next message waits for 16 tokens, 3.2 s.
    expect(log).toEqual(['three', 'twenty-five'])
    expect(clock.delays()).toEqual([3_200])
    clock.advance(3_200)
    expect(log).toEqual(['three', 'twenty-five', 'one'])
  })

  it('sends under a pace of less than one message per burst: a message once the bucket is full', async () => {
    // 0.25 a second: a burst of half a message.
    const clock = fakeClock(0.25)
    const pace = new RoomPace(clock)
    const log: string[] = []
    pace.request(busySender(pace, 'updates', log))
    await microtasks()
    expect(log).toEqual(['updates'])
    // Half a token below empty: 4 s until the bucket is full again, one message every 4 s.
    expect(clock.delays()).toEqual([4_000])
    clock.advance(4_000)
    expect(log).toEqual(['updates', 'updates'])
  })

  it('cancels its timer when the turn it waits for is withdrawn', async () => {
    const clock = fakeClock(1)
    const pace = new RoomPace(clock)
    const log: string[] = []
    const turn = busySender(pace, 'updates', log)
    pace.request(turn)
    await microtasks()
    expect(log).toEqual(['updates', 'updates'])
    expect(clock.delays()).toEqual([1_000])
    pace.withdraw(turn)
    expect(clock.delays()).toEqual([])
  })
})
