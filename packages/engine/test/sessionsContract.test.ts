/**
 * Sentences of docs/semantics.md (Sessions) that scenarios.test.ts and the session differential
 * leave open: scenarios merge a fired session with one that was never corrected (so the revision
 * it continues is its own), judge the proto-window only against a session already final, and
 * move a start only of a fired session; the differential model shares the engine's rules rather
 * than pinning them one by one.
 */
import { describe, expect, it } from 'vitest'
import { createEngine, manual, session, type StreamEvent, type WindowChange } from '../src/index.ts'

/** An event of source `a` at `ts`. */
function at(ts: number): StreamEvent {
  return { id: `a@${ts}`, source: 'a', ts, value: 1 }
}

/** A session engine under a manual watermark, and every change it emits as `type [start,end) n r`. */
function sessions(allowedLateness = 0): { engine: ReturnType<typeof createEngine>; seen: string[] } {
  const engine = createEngine({ windows: session(10), watermark: manual(), allowedLateness })
  const seen: string[] = []
  engine.subscribe((changes: readonly WindowChange[]) => {
    for (const { type, result: r } of changes) seen.push(`${type} [${r.start},${r.end}) n${r.count} ${r.status} r${r.revision}`)
  })
  return { engine, seen }
}

describe('session windows', () => {
  it('lateness is judged on the event’s own proto-window: refused when ts + gap + allowedLateness <= W, though it would join an open session', () => {
    const { engine } = sessions(5)
    engine.advanceWatermark(25)
    engine.ingest([at(20)]) // [20,30) open: not fired
    // 10 is within the gap of 20, but its own [10,20) is final: 10 + 10 + 5 <= 25. 11 is not.
    expect(engine.ingest([at(10)])).toMatchObject({ accepted: 0, beyondLateness: 1 })
    expect(engine.ingest([at(11)])).toMatchObject({ accepted: 1, beyondLateness: 0 })
    expect(engine.results().map((r) => [r.start, r.end, r.count])).toEqual([[11, 30, 2]])
  })

  it('a merge continues the highest revision among the sessions it joins, and retracts the absorbed one with its last result', () => {
    const { engine, seen } = sessions(1_000)
    engine.ingest([at(0), at(30)])
    engine.advanceWatermark(50) // both fire
    engine.ingest([at(31)])
    engine.ingest([at(32)]) // [30,42) corrected twice: r2
    seen.length = 0
    engine.ingest([at(9), at(18), at(27)]) // bridges [0,10) (r0) and [30,42) (r2)
    expect(seen).toEqual(['retract [30,42) n3 corrected r2', 'correction [0,42) n7 corrected r3'])
  })

  it('a merge of sessions none of which fired is provisional, the absorbed one retracted', () => {
    const { engine, seen } = sessions()
    engine.ingest([at(0), at(15)])
    seen.length = 0
    engine.ingest([at(8)])
    expect(seen).toEqual(['retract [15,25) n1 provisional r0', 'provisional [0,25) n3 provisional r0'])
  })

  it('a new start of a session that has not fired: its old identity retracted, then a provisional result under the new start', () => {
    const { engine, seen } = sessions()
    engine.ingest([at(10)])
    seen.length = 0
    engine.ingest([at(5)])
    expect(seen).toEqual(['retract [10,20) n1 provisional r0', 'provisional [5,20) n2 provisional r0'])
  })
})
