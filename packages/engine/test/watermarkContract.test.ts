/**
 * Sentences of docs/semantics.md (Time: The watermark W, The proof frontier P, Frontiers move
 * between batches) that the reference-model properties and scenarios.test.ts leave open: the
 * model compares W and P after each operation, but its plans never send a source whose whole
 * batch is beyond lateness, nor check the `stats()` fields that name sources (`watermarkHeldBy`,
 * `proofHeldBy`, their ties, `idleSources`) or `watermarkLag` at the ends of time.
 * frontierHolders.test.ts names the holders as they change, never tied. A fake clock (`now`).
 */
import { describe, expect, it } from 'vitest'
import { createEngine, manual, type StreamEvent, tumbling } from '../src/index.ts'

/** An event of `source` at `ts`, with `seq` when given. */
function at(source: string, ts: number, seq?: number): StreamEvent {
  return { id: `${source}@${ts}`, source, ts, value: 1, ...(seq === undefined ? {} : { seq }) }
}

describe('the watermark W', () => {
  it('every valid, non-duplicate event counts for its source, even one beyond lateness: a source back with a backlog holds W while it catches up', () => {
    const clock = { now: 0 }
    const engine = createEngine({ windows: tumbling(10), idleTimeout: 100, now: () => clock.now })
    engine.ingest([at('a', 5), at('b', 5)])
    clock.now = 200
    engine.ingest([at('a', 100)]) // b turned idle: W follows a
    expect(engine.watermark()).toBe(100)
    clock.now = 210
    // b is back with a backlog every window refuses: it is active again, its maxTs 20.
    expect(engine.ingest([at('b', 20)])).toMatchObject({ accepted: 0, beyondLateness: 1 })
    engine.ingest([at('a', 150)])
    expect(engine.watermark()).toBe(100)
    expect(engine.stats()).toMatchObject({ watermarkHeldBy: 'b', watermarkLag: 50 })
  })

  it('watermarkLag is 0 when nothing is held back: before any event, and once W is Infinity', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual() })
    expect(engine.stats()).toMatchObject({ watermark: Number.NEGATIVE_INFINITY, watermarkLag: 0 })
    engine.ingest([at('a', 5)])
    engine.advanceWatermark(Number.POSITIVE_INFINITY)
    expect(engine.stats().watermarkLag).toBe(0)
  })
})

describe('the proof frontier P', () => {
  it('a source whose gap-free prefix is empty (seq 1 not yet in) proves nothing; seq 1 arriving proves the prefix it completes', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual() })
    engine.ingest([at('a', 50, 2)])
    expect(engine.stats()).toMatchObject({ proofFrontier: Number.NEGATIVE_INFINITY, proofHeldBy: 'a' })
    engine.ingest([at('a', 5, 1)])
    expect(engine.stats().proofFrontier).toBe(50)
  })

  it('is not monotone: a new source lowers it', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual() })
    engine.ingest([at('a', 100, 1)])
    expect(engine.stats().proofFrontier).toBe(100)
    engine.ingest([at('b', 20, 1)])
    expect(engine.stats()).toMatchObject({ proofFrontier: 20, proofHeldBy: 'b' })
  })
})

describe('stats(): sources and the frontiers’ holders', () => {
  it('ties go to the source known first, for W and for P', () => {
    const engine = createEngine({ windows: tumbling(10) })
    engine.ingest([at('z', 5, 1), at('y', 5, 1)])
    expect(engine.stats()).toMatchObject({ watermarkHeldBy: 'z', proofHeldBy: 'z' })
  })

  it('idleSources counts a source left out of W though it did not move W (it was ahead of the others)', () => {
    const clock = { now: 0 }
    const engine = createEngine({ windows: tumbling(10), idleTimeout: 10, now: () => clock.now })
    engine.ingest([at('ahead', 50), at('behind', 5)])
    clock.now = 5
    engine.ingest([at('behind', 6)])
    clock.now = 12
    engine.tick()
    expect(engine.stats()).toMatchObject({ idleSources: 1, watermark: 6, watermarkHeldBy: 'behind' })
  })
})

describe('the proof frontier P: a seq above a gap with a ts below the prefix', () => {
  // seq 3 at ts 5 after seq 1 at ts 10: ts went backwards along seq before the gap at seq 2 filled.
  it('makes the source unprovable at once: no window fires proven on a prefix the source already contradicted', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual() })
    const changes: { type: string; basis: string }[] = []
    engine.subscribe((batch) => {
      for (const change of batch) changes.push({ type: change.type, basis: change.result.basis })
    })
    engine.ingest([at('a', 10, 1), at('a', 5, 3)])
    expect(engine.stats().proofFrontier).toBe(Number.NEGATIVE_INFINITY)
    expect(changes.filter((c) => c.basis === 'proven')).toEqual([])
    // The unseen seq 2 falls below where P would have stood.
    engine.ingest([at('a', 7, 2)])
    expect(engine.stats().proofFrontier).toBe(Number.NEGATIVE_INFINITY)
    expect(changes.filter((c) => c.basis === 'proven')).toEqual([])
  })

  it('a seq above a gap at or after the prefix ts keeps it provable', () => {
    const engine = createEngine({ windows: tumbling(10), watermark: manual() })
    engine.ingest([at('a', 10, 1), at('a', 10, 3), at('a', 12, 5)])
    expect(engine.stats().proofFrontier).toBe(10)
    engine.ingest([at('a', 10, 2), at('a', 11, 4)])
    expect(engine.stats().proofFrontier).toBe(12)
  })
})
