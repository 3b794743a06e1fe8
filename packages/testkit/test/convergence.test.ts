/**
 * Convergence of N >= 5 engines, each bound to its own Y.Doc, exchanging Yjs updates through
 * a connector that reorders, repeats and drops them, under random partitions; then
 * anti-entropy (state-vector exchange). Now and then a source's writer finishes it (the single
 * engine too), and its later events are refused. Every replica must equal every other and a
 * single engine that saw every event and every finish (window values and aggregates per
 * (window, key, start), every source's clock, finished or not, and the proof frontier), and
 * every replica must hold bit-identical aggregate states in every cell.
 *
 * Seeded, in tiers; a failure prints the seed, the tier and a one-line repro.
 * TIDEMARK_SEED=<n> replays; TIDEMARK_EXTENSIVE=1 runs more seeds and a larger tier.
 */
import { seededRandom } from '@tidemark/seeded-random'
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import {
  type AggregateDefinitions,
  type ClockEntry,
  createEngine,
  type Engine,
  manual,
  session,
  cumulating,
  sliding,
  type StreamEvent,
  type TidemarkEngine,
  tumbling,
  type WindowSpec,
} from '@tidemark/engine'
import { applyPeerUpdate } from '@tidemark/yjs'
import { bindDoc } from '@tidemark/yjs'
import { extensive, seed as baseSeed } from '@tidemark/seeded-random/property'
import { AGGREGATE_MENU } from '../src/model/streamPlan.ts'

const FILE = 'packages/testkit/test/convergence.test.ts'
const SPECS: readonly WindowSpec[] = [tumbling(10), sliding(20, 5), cumulating(30, 10), session(7)]
const PEER = 'connector'

interface Tier {
  readonly name: string
  readonly replicas: number
  readonly sources: number
  readonly steps: number
  readonly seeds: number
}

const TIERS: readonly Tier[] = [
  { name: 'small', replicas: 5, sources: 7, steps: 150, seeds: extensive ? 60 : 6 },
  { name: 'medium', replicas: 6, sources: 12, steps: 600, seeds: extensive ? 20 : 2 },
  ...(extensive ? [{ name: 'large', replicas: 8, sources: 24, steps: 3000, seeds: 4 }] : []),
]

function values(engine: Engine<AggregateDefinitions>) {
  return engine
    .results()
    .map(({ window, key, start, end, count, sum, min, max, aggregates }) => ({ window, key, start, end, count, sum, min, max, aggregates }))
}

/** Every live cell's aggregate states, as bytes, by address (tombstones apart: their states are the empty ones). */
function sketches(engine: Engine<AggregateDefinitions>): string[] {
  return engine.replica
    .exportState()
    .cells.filter(({ cell }) => cell.count > 0)
    .map(({ address, cell, aggregates }) => JSON.stringify([address, cell.count, aggregates?.map((bytes) => [...bytes])]))
    .sort()
}

/** Every source's clock, whoever writes it (the single engine writes them all). */
function clocks(engine: Engine<AggregateDefinitions>) {
  const view = ({ writer: _writer, ...clock }: ClockEntry) => ({ ...clock, finished: clock.finished === true })
  return engine.replica
    .exportState()
    .clocks.map(view)
    .sort((a, b) => (a.source < b.source ? -1 : 1))
}

interface Replica {
  readonly engine: TidemarkEngine<AggregateDefinitions>
  readonly doc: Y.Doc
}

interface Message {
  readonly to: number
  readonly update: Uint8Array
}

/** The connector's statistics, for the failure message. */
interface Traffic {
  sent: number
  delivered: number
  dropped: number
  repeated: number
  partitioned: number
}

function runScenario(tier: Tier, seed: number): void {
  const random = seededRandom(seed)
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T
  const options = { windows: SPECS, watermark: manual(), retention: Number.POSITIVE_INFINITY, aggregates: AGGREGATE_MENU }
  const single = createEngine(options)
  const replicas: Replica[] = Array.from({ length: tier.replicas }, (_, i) => {
    const engine = createEngine({ ...options, replicaId: `r${i}` }) as TidemarkEngine<AggregateDefinitions>
    const doc = new Y.Doc()
    bindDoc(engine, doc, { onError: (e) => { throw e } })
    return { engine, doc }
  })
  const traffic: Traffic = { sent: 0, delivered: 0, dropped: 0, repeated: 0, partitioned: 0 }
  let queue: Message[] = []
  /** Group of each replica; messages between groups are lost while a partition lasts. */
  let groups: number[] | null = null
  replicas.forEach((from, f) => {
    from.doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === PEER) return
      replicas.forEach((_, to) => {
        if (to === f) return
        traffic.sent++
        if (groups !== null && groups[to] !== groups[f]) traffic.partitioned++
        else queue.push({ to, update })
      })
    })
  })
  const deliver = (): void => {
    if (queue.length === 0) return
    const i = Math.floor(random() * queue.length)
    const message = queue[i] as Message
    const roll = random()
    if (roll < 0.1) {
      queue.splice(i, 1)
      traffic.dropped++
      return
    }
    if (roll < 0.25) traffic.repeated++
    else queue.splice(i, 1)
    applyPeerUpdate((replicas[message.to] as Replica).doc, message.update, PEER)
    traffic.delivered++
  }
  const antiEntropy = (a: Replica, b: Replica): void => {
    applyPeerUpdate(b.doc, Y.encodeStateAsUpdate(a.doc, Y.encodeStateVector(b.doc)), PEER)
    applyPeerUpdate(a.doc, Y.encodeStateAsUpdate(b.doc, Y.encodeStateVector(a.doc)), PEER)
  }

  const seqs = new Map<string, number>()
  const sent: StreamEvent[] = []
  // Finishes come from a stream of their own: the traffic is the same as without them.
  const finishing = seededRandom(seed ^ 0x5f1a15)
  let finishes = 0
  for (let step = 0; step < tier.steps; step++) {
    if (finishing() < 0.02) {
      // Its writer finishes a source (maybe one that sent nothing yet); later events of it are still sent, and refused.
      const s = Math.floor(finishing() * tier.sources)
      void (replicas[s % tier.replicas] as Replica).engine.finishSource(`s${s}`)
      void single.finishSource(`s${s}`)
      finishes++
    }
    const roll = random()
    if (roll < 0.4) {
      const s = Math.floor(random() * tier.sources)
      const source = `s${s}`
      const batch: StreamEvent[] = []
      const size = 1 + Math.floor(random() * 4)
      for (let k = 0; k < size; k++) {
        if (sent.length > 0 && random() < 0.1) {
          // a duplicate, resent by its device
          const old = pick(sent)
          if (old.source === source) batch.push(old)
          continue
        }
        const seq = (seqs.get(source) ?? 0) + 1
        seqs.set(source, seq)
        const event = {
          id: `${source}-${seq}`,
          source,
          seq,
          ts: Math.floor(random() * 120),
          key: pick(['a', 'b', '__proto__']),
          value: Math.floor(random() * 101) - 50,
        }
        batch.push(event)
        sent.push(event)
      }
      if (batch.length === 0) continue
      single.ingest(batch)
      ;(replicas[s % tier.replicas] as Replica).engine.ingest(batch)
    } else if (roll < 0.9) {
      deliver()
    } else if (roll < 0.95) {
      groups = groups === null ? replicas.map(() => Math.floor(random() * 2)) : null
    } else {
      antiEntropy(pick(replicas), pick(replicas))
    }
  }
  // Heal, deliver what is still in flight (still lossy), then anti-entropy until quiet.
  groups = null
  while (queue.length > 0) deliver()
  queue = []
  for (let round = 0; round < 2; round++) {
    for (const a of replicas) for (const b of replicas) if (a !== b) antiEntropy(a, b)
  }

  const expected = values(single)
  const vector = Y.encodeStateVector((replicas[0] as Replica).doc)
  const states = sketches((replicas[0] as Replica).engine)
  const expectedClocks = clocks(single)
  const proof = single.stats().proofFrontier
  let refused = 0
  replicas.forEach((r, i) => {
    const detail = `replica r${i}, ${finishes} finishes, traffic ${JSON.stringify(traffic)}`
    expect(Y.encodeStateVector(r.doc), detail).toEqual(vector)
    expect(values(r.engine), detail).toEqual(expected)
    expect(sketches(r.engine), detail).toEqual(states)
    expect(r.engine.stats().anomalies.invalid_remote_cell, detail).toBe(0)
    expect(clocks(r.engine), detail).toEqual(expectedClocks)
    expect(r.engine.stats().proofFrontier, detail).toBe(proof)
    refused += r.engine.stats().anomalies.finished_source
  })
  // The writers refused what the single engine refused: events of their finished sources.
  expect(refused).toBe(single.stats().anomalies.finished_source)
  expect(expected.length).toBeGreaterThan(0)
  // The aggregates are there to converge: sketches of several values from several devices.
  expect(expected.some((r) => (r.aggregates.p as number[]).length > 0 && (r.aggregates.devices as number) > 1)).toBe(true)
}

describe('replicas exchanging Yjs updates through a lossy, reordering, repeating connector', () => {
  for (const tier of TIERS) {
    it(`${tier.name}: ${tier.replicas} replicas, partitions, then anti-entropy, equal one engine that saw everything`, () => {
      for (let i = 0; i < tier.seeds; i++) {
        const seed = baseSeed + i
        try {
          runScenario(tier, seed)
        } catch (error) {
          const repro = `TIDEMARK_SEED=${seed} npx vitest run ${FILE} -t ${JSON.stringify(tier.name)}`
          const message = `seed ${seed} tier ${tier.name}\nrepro: ${repro}\n${error instanceof Error ? error.message : String(error)}`
          console.error(message)
          throw new Error(message, { cause: error })
        }
      }
    }, extensive ? 1_800_000 : 180_000)
  }
})
