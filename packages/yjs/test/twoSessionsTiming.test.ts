/**
 * Two sessions of one replica id under different configurations, in time: updates cross a link
 * with a latency, on the bindings' clock (`now`), as through a relay. A slow link must not keep
 * them exchanging for ever, and a stale tab that wakes while the live session writes must not
 * leave the room without the live session's state.
 */
import { createEngine, manual, type StreamEvent, type TidemarkEngine, tumbling } from '@tidemark/engine'
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import { applyPeerUpdate } from '../src/binding/applyPeerUpdate.ts'
import { bindDoc } from '../src/binding/bindDoc.ts'

const T0 = 1_700_000_040_000 - (1_700_000_040_000 % 60_000)
const OLD = { windows: tumbling(60_000), watermark: manual(), allowedLateness: 0 }
const NEW = { windows: tumbling(60_000), watermark: manual(), allowedLateness: 600_000 }
const HOUR = 3_600_000

const readings = (source: string, from: number, n: number): StreamEvent[] =>
  Array.from({ length: n }, (_, i) => ({ id: `${source}-${from + i}`, source, seq: from + i, ts: T0 + (from + i) * 1000, key: 'temp', value: from + i }))

interface Session {
  readonly engine: TidemarkEngine
  readonly doc: Y.Doc
  readonly errors: Error[]
}

/** A session of replica `a` on the clock `clock`, its doc of Yjs client `client`. */
function session(options: typeof OLD, client: number, before: StreamEvent[], clock: { now: number }): Session {
  const engine = createEngine({ ...options, replicaId: 'a' }) as TidemarkEngine
  engine.ingest(before)
  const doc = new Y.Doc()
  doc.clientID = client
  const errors: Error[] = []
  bindDoc(engine, doc, { onError: (error) => errors.push(error), now: () => clock.now })
  return { engine, doc, errors }
}

/** A room docs join over a link of `latency` ms each way: every update crosses on its own, in time order; what is in flight to a doc that leaves is lost. */
class Room {
  readonly doc: Y.Doc
  readonly #clock: { now: number }
  readonly #latency: number
  readonly #queue: { at: number; to: Y.Doc; update: Uint8Array; origin: string }[] = []
  readonly #links = new Map<Session, () => void>()
  deliveries = 0

  constructor(clock: { now: number }, latency: number, gc: boolean) {
    this.#clock = clock
    this.#latency = latency
    this.doc = new Y.Doc({ gc })
  }

  join(session: Session, tag: string): void {
    const send = (to: Y.Doc, update: Uint8Array, origin: string): void => {
      this.#queue.push({ at: this.#clock.now + this.#latency, to, update, origin })
    }
    const down = (update: Uint8Array, origin: unknown): void => {
      if (origin !== tag) send(session.doc, update, 'room')
    }
    const up = (update: Uint8Array, origin: unknown): void => {
      if (origin !== 'room') send(this.doc, update, tag)
    }
    this.doc.on('update', down)
    session.doc.on('update', up)
    send(session.doc, Y.encodeStateAsUpdate(this.doc), 'room')
    send(this.doc, Y.encodeStateAsUpdate(session.doc), tag)
    this.#links.set(session, () => {
      this.doc.off('update', down)
      session.doc.off('update', up)
    })
  }

  leave(session: Session): void {
    this.#links.get(session)?.()
    this.#links.delete(session)
    for (let i = this.#queue.length - 1; i >= 0; i--) if (this.#queue[i]?.to === session.doc) this.#queue.splice(i, 1)
  }

  /** Delivers what is due up to `until`, moving the clock; returns whether anything is still in flight. */
  run(until: number): boolean {
    for (;;) {
      this.#queue.sort((a, b) => a.at - b.at)
      const next = this.#queue[0]
      if (next === undefined || next.at > until) break
      this.#queue.shift()
      this.#clock.now = next.at
      applyPeerUpdate(next.to, next.update, next.origin)
      this.deliveries++
    }
    this.#clock.now = until
    return this.#queue.length > 0
  }
}

/** What a dashboard of the new configuration shows of `doc`: [count, sum] per window of the key. */
function dashboard(doc: Y.Doc): number[][] {
  const engine = createEngine(NEW) as TidemarkEngine
  const copy = new Y.Doc()
  bindDoc(engine, copy, { readOnly: true, onError: () => undefined })
  applyPeerUpdate(copy, Y.encodeStateAsUpdate(doc), 'room')
  return engine.results({ key: 'temp' }).map((r) => [r.count, r.sum])
}

describe('two live sessions of different configurations over a slow link', () => {
  it.each([1_000, 6_000])('settle, one giving up, with %i ms a hop (answers within the 30 s window)', (latency) => {
    const clock = { now: 1_000_000 }
    const room = new Room(clock, latency, true)
    const old = session(OLD, 2, readings('da', 1, 10), clock)
    const fresh = session(NEW, 1, readings('da', 11, 10), clock)
    room.join(old, 'old')
    room.join(fresh, 'new')
    expect(room.run(clock.now + HOUR)).toBe(false)
    expect(old.errors.length + fresh.errors.length).toBe(1)
    expect(room.deliveries).toBeLessThan(100)
  })
})

describe('a stale tab of the old build that wakes for a few seconds now and then', () => {
  it.each([
    [2, 1],
    [1, 2],
  ])('never takes the replica from the live session, though each wake answers in time (stale client %i, live client %i)', (staleClient, liveClient) => {
    const clock = { now: 1_000_000 }
    const room = new Room(clock, 50, true)
    const stale = session(OLD, staleClient, readings('da', 1, 10), clock)
    room.join(stale, 'stale')
    room.run(clock.now + 1_000)
    room.leave(stale)
    const live = session(NEW, liveClient, readings('db', 1, 10), clock)
    room.join(live, 'live')
    room.run(clock.now + 60_000)
    for (let wake = 0; wake < 4; wake++) {
      room.join(stale, 'stale')
      room.run(clock.now + 5_000)
      room.leave(stale)
      room.run(clock.now + 60_000)
    }
    expect(live.errors).toEqual([])
    expect(dashboard(room.doc)).toEqual([[10, 55]])
  })
})

describe('a stale tab of the old build that wakes while the live session writes', () => {
  it.each([true, false])("leaves the room the live session's state, the new reading included (room gc %s)", (gc) => {
    const clock = { now: 1_000_000 }
    const room = new Room(clock, 50, gc)
    const stale = session(OLD, 2, readings('da', 1, 10), clock)
    room.join(stale, 'stale')
    room.run(clock.now + 1_000)
    room.leave(stale)
    const live = session(NEW, 1, readings('db', 1, 10), clock)
    room.join(live, 'live')
    room.run(clock.now + 60_000)
    // The old tab wakes for 5 s; just then the live session records a reading into its open window.
    room.join(stale, 'stale')
    live.engine.ingest([{ id: 'db-late', source: 'db', seq: 11, ts: T0 + 30_000, key: 'temp', value: 1_000 }])
    room.run(clock.now + 5_000)
    room.leave(stale)
    room.run(clock.now + 60_000)
    expect(live.errors).toEqual([])
    expect(dashboard(room.doc)).toEqual([[11, 55 + 1_000]])
  })
})
