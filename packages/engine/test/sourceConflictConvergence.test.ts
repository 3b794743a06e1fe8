/**
 * Several writers of one source (one replica id given to several tabs), each with its own
 * readings, some of them finishing it, and a dashboard: whatever order their writes reach one
 * another in, once every replica heard every write, all of them hold one clock of the source,
 * one proof frontier and one watermark.
 */
import fc from 'fast-check'
import { assertSeeded } from '@tidemark/seeded-random/property'
import { describe, it } from 'vitest'
import { boundedOutOfOrderness, createEngine, type Engine, type LocalWrite, type StreamEvent, tumbling } from '../src/index.ts'

const FILE = 'packages/engine/test/sourceConflictConvergence.test.ts'
const NAME = 'writers of one source, finished or not, and a dashboard converge on one clock, one P and one W in any delivery order'

/** `count` readings of source `s` written by `writer`, one a second from 0 s. */
function readings(writer: string, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${writer}-${i + 1}`, source: 's', seq: i + 1, ts: i * 1_000, value: 1 }))
}

interface Replica {
  readonly engine: Engine
  readonly writes: LocalWrite[]
  /** How many of each replica's writes it merged. */
  readonly heard: number[]
}

/** `to` merges the writes of `from` it has not merged yet. */
function hear(to: Replica, from: Replica, index: number): void {
  for (const w of from.writes.slice(to.heard[index])) to.engine.replica.mergeRemote(w.cells, w.clocks)
  to.heard[index] = from.writes.length
}

const WRITER = fc.record({ readings: fc.integer({ min: 1, max: 20 }), finishes: fc.boolean() })
const PLAN = fc.record({
  writers: fc.array(WRITER, { minLength: 2, maxLength: 3 }),
  deliveries: fc.array(fc.tuple(fc.nat(3), fc.nat(3)), { maxLength: 40 }),
})

describe('a source with several writers', () => {
  it(NAME, () => {
    assertSeeded(
      fc.property(PLAN, ({ writers, deliveries }) => {
        const ids = [...writers.map((_, i) => `w${i}`), 'dashboard']
        const replicas: Replica[] = ids.map((replicaId) => {
          const engine = createEngine({ windows: tumbling(10_000), watermark: boundedOutOfOrderness(1_000), now: () => 0, replicaId })
          const writes: LocalWrite[] = []
          engine.replica.onLocalWrite((w) => writes.push(structuredClone(w)))
          return { engine, writes, heard: ids.map(() => 0) }
        })
        writers.forEach((writer, i) => {
          const { engine } = replicas[i] as Replica
          engine.ingest(readings(ids[i] as string, writer.readings))
          if (writer.finishes) void engine.finishSource('s')
        })
        for (const [to, from] of deliveries) {
          const [t, f] = [to % replicas.length, from % replicas.length]
          if (t !== f) hear(replicas[t] as Replica, replicas[f] as Replica, f)
        }
        // Then everyone hears everything, until no replica writes anything new.
        for (let round = 0; round < replicas.length + 1; round++) {
          for (const [t, to] of replicas.entries()) for (const [f, from] of replicas.entries()) if (t !== f) hear(to, from, f)
        }
        const views = replicas.map(({ engine }) => JSON.stringify([engine.replica.exportState().clocks, engine.stats().proofFrontier, engine.stats().watermark]))
        if (new Set(views).size !== 1) throw new Error(`replicas differ:\n${views.join('\n')}`)
      }),
      FILE,
      NAME,
      200,
    )
  })
})
