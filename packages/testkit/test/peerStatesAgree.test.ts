/**
 * Honest cells are never refused: replicas that write cells through every path (fractional,
 * negative and edge event times, late events past advancing watermarks, sources written by two
 * replicas, reloads from a checkpoint, some leaving states out, replicas differing in triggers,
 * accumulation and retention) and exchange them through Yjs and `exportState` must count no
 * `invalid_remote_cell`; those that keep every window hold the same cells, states and all. A
 * peer's state is held to its cell (docs/replication.md, Merging peers' state): this checks that
 * every state an engine writes agrees with the cell it writes.
 *
 * Seeded; a failure prints the seed and a one-line repro. TIDEMARK_SEED=<n> replays;
 * TIDEMARK_EXTENSIVE=1 runs more seeds.
 */
import { seededRandom } from '@tidemark/seeded-random'
import { extensive, seed as baseSeed } from '@tidemark/seeded-random/property'
import { describe, expect, it } from 'vitest'
import * as Y from 'yjs'
import {
  type AggregateDefinitions,
  type EngineCheckpoint,
  createEngine,
  cumulating,
  defineAggregate,
  distinct,
  everyElement,
  histogram,
  latest,
  manual,
  never,
  quantiles,
  session,
  sliding,
  type StreamEvent,
  type TidemarkEngine,
  tumbling,
  type WindowSpec,
} from '@tidemark/engine'
import { applyPeerUpdate, bindDoc } from '@tidemark/yjs'

const FILE = 'packages/testkit/test/peerStatesAgree.test.ts'
const PEER = 'peer'
const SPECS: readonly WindowSpec[] = [tumbling(10), sliding(20, 5), cumulating(30, 10), session(7)]
const SEEDS = extensive ? 400 : 25

const count = defineAggregate({
  name: 'events',
  init: () => 0,
  add: (n: number) => n + 1,
  merge: (a: number, b: number) => a + b,
  result: (n: number) => n,
  encode: (n: number) => new Uint8Array([n & 0xff, (n >> 8) & 0xff]),
  decode: (bytes: Uint8Array) => {
    if (bytes.length !== 2) throw new RangeError(`expected 2 bytes, got ${bytes.length}`)
    return (bytes[0] as number) | ((bytes[1] as number) << 8)
  },
})

const AGGREGATES: AggregateDefinitions = {
  last: latest(),
  p: quantiles({ at: [0, 0.5, 1], maxBuckets: 16 }),
  // Exact up to 2 identities: cells switch to registers after a few events.
  values: distinct({ precision: 5 }),
  spread: histogram({ bounds: [-1, 0, 1] }),
  events: count,
}

interface Replica {
  engine: TidemarkEngine<AggregateDefinitions>
  binding: { destroy(): void }
  readonly doc: Y.Doc
  readonly options: Parameters<typeof createEngine>[0]
}

/** A checkpoint with some cells' states left out, as a checkpoint may leave them (then the cell holds fewer values than it counts). */
function withoutSomeStates(checkpoint: EngineCheckpoint, random: () => number): EngineCheckpoint {
  const copy = structuredClone(checkpoint)
  // A slice's cell is [source, cell, states], a session fragment [source, start, cell, states].
  for (const index of copy.slices ?? []) {
    for (const [, , parts] of index.slices) for (const [, cells] of parts) for (const cell of cells) if (random() < 0.3) (cell as unknown as unknown[]).length = 2
  }
  for (const w of copy.windows) for (const f of w.fragments) if (random() < 0.3) (f as unknown as unknown[]).length = 3
  return copy
}

/** Event times that land on slice, window and gap edges, just before and between them, and before 1970. */
function eventTime(random: () => number, pick: <T>(items: readonly T[]) => T, base: number): number {
  const roll = random()
  const t = base + Math.floor(random() * 40) - 10
  if (roll < 0.3) return t
  if (roll < 0.5) return t + pick([0.5, 0.25, 0.999, 1e-9])
  if (roll < 0.6) return Math.floor(t / 5) * 5 - pick([1e-9, 0.5, 0])
  if (roll < 0.7) return -t - random()
  return t - 1e-7
}

function runScenario(seed: number): void {
  const random = seededRandom(seed)
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T
  const shared = { windows: SPECS, watermark: manual(), allowedLateness: pick([0, 3, 10]), aggregates: AGGREGATES }
  // Half the histories keep every window: a writer's retention retires its cells from the document, and a peer that
  // had not read one by then keeps the version it had (replication.md, Bounded state), so only these must converge.
  const keepAll = random() < 0.5
  const bind = (engine: TidemarkEngine<AggregateDefinitions>, doc: Y.Doc) => bindDoc(engine, doc, { onError: (e) => { throw e } })
  const replicas: Replica[] = Array.from({ length: 3 }, (_, i) => {
    const options = {
      ...shared,
      replicaId: `r${i}`,
      trigger: pick([{}, { early: never() }, { early: everyElement(), late: never() }]),
      accumulation: pick(['accumulating', 'discarding'] as const),
      retention: keepAll ? Number.POSITIVE_INFINITY : pick([0, 5, Number.POSITIVE_INFINITY]),
      maxFutureSkew: Number.POSITIVE_INFINITY,
    }
    const engine = createEngine(options) as TidemarkEngine<AggregateDefinitions>
    const doc = new Y.Doc()
    return { engine, binding: bind(engine, doc), doc, options }
  })
  let queue: { to: number; update: Uint8Array }[] = []
  replicas.forEach((from, f) => {
    from.doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === PEER) return
      for (let to = 0; to < replicas.length; to++) if (to !== f) queue.push({ to, update })
    })
  })
  const deliver = (): void => {
    const i = Math.floor(random() * queue.length)
    const message = queue.splice(i, 1)[0]
    if (message !== undefined) applyPeerUpdate((replicas[message.to] as Replica).doc, message.update, PEER)
  }
  const seqs = new Map<string, number>()
  let base = 0
  let watermark = Number.NEGATIVE_INFINITY
  for (let step = 0; step < 120; step++) {
    const roll = random()
    if (roll < 0.45) {
      // Mostly one replica per source; now and then another writes it too (a device that moved, or a conflict).
      const s = Math.floor(random() * 5)
      const source = `s${s}`
      const writer = random() < 0.85 ? s % 3 : Math.floor(random() * 3)
      const batch: StreamEvent[] = []
      for (let k = 1 + Math.floor(random() * 4); k > 0; k--) {
        const seq = (seqs.get(source) ?? 0) + 1
        seqs.set(source, seq)
        batch.push({ id: `${source}-${seq}-${writer}`, source, seq, ts: eventTime(random, pick, base), key: pick(['a', 'b']), value: pick([0, 1, -1, 0.5, -3, 7, 1e-320]) })
      }
      ;(replicas[writer] as Replica).engine.ingest(batch)
    } else if (roll < 0.85) {
      deliver()
    } else if (roll < 0.95) {
      base += Math.floor(random() * 15)
      watermark = Math.max(watermark, base - 10 + pick([0, 0.5, -0.25]))
      for (const r of replicas) if (random() < 0.7) r.engine.advanceWatermark(watermark)
    } else if (roll < 0.96) {
      // A reload: the replica continues from a checkpoint (maybe with some states left out) and binds to its document again.
      const r = pick(replicas)
      const checkpoint = r.engine.checkpoint()
      r.binding.destroy()
      r.engine.close()
      r.engine = createEngine(r.options) as TidemarkEngine<AggregateDefinitions>
      r.engine.restore(random() < 0.5 ? checkpoint : withoutSomeStates(checkpoint, random))
      r.binding = bind(r.engine, r.doc)
    } else if (roll < 0.975) {
      const [a, b] = [pick(replicas), pick(replicas)]
      applyPeerUpdate(b.doc, Y.encodeStateAsUpdate(a.doc, Y.encodeStateVector(b.doc)), PEER)
    } else {
      // Anti-entropy through the port: everything a replica holds, its peers' cells and tombstones too.
      const [a, b] = [pick(replicas), pick(replicas)]
      const state = structuredClone(a.engine.replica.exportState())
      b.engine.replica.mergeRemote(state.cells, state.clocks)
    }
  }
  while (queue.length > 0) deliver()
  queue = []
  for (const a of replicas) for (const b of replicas) if (a !== b) applyPeerUpdate(b.doc, Y.encodeStateAsUpdate(a.doc, Y.encodeStateVector(b.doc)), PEER)
  replicas.forEach((r, i) => {
    const stats = r.engine.stats()
    expect(stats.anomalies.invalid_remote_cell, `replica r${i}: ${JSON.stringify(stats.remoteAnomalies)}`).toBe(0)
  })
  if (!keepAll) return
  // Converged: every replica holds the same cells, states and all.
  const held = replicas.map((r) =>
    r.engine.replica
      .exportState()
      .cells.map((c) => JSON.stringify([c.address, { ...c.cell }, c.aggregates?.map((bytes) => [...bytes])]))
      .sort(),
  )
  for (const [i, cells] of held.entries()) expect(cells, `replica r${i}`).toEqual(held[0])
  expect((held[0] as string[]).length).toBeGreaterThan(0)
}

describe('honest cells through Yjs (replication.md, Merging peers\' state)', () => {
  it(`no invalid_remote_cell across ${SEEDS} seeded histories of 3 replicas, which converge where they keep every window`, () => {
    for (let i = 0; i < SEEDS; i++) {
      const seed = baseSeed + i
      try {
        runScenario(seed)
      } catch (error) {
        const repro = `TIDEMARK_SEED=${seed} npx vitest run --project testkit ${FILE}`
        const message = `seed ${seed}\nrepro: ${repro}\n${error instanceof Error ? error.message : String(error)}`
        console.error(message)
        throw new Error(message, { cause: error })
      }
    }
  }, 120_000)
})
