import 'fake-indexeddb/auto'
import { IDBFactory, IDBObjectStore as FakeObjectStore } from 'fake-indexeddb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type Engine, type EngineOptions, tumbling } from '@tidemark/engine'
import { ManualTimers, visibleState, whenDurable } from '@tidemark/engine/testing'
import { finalArchive } from '../src/archive.ts'
import { indexedDbPersistence, openEngine, recoveryReport } from '../src/index.ts'
import { seededRandom } from '@tidemark/seeded-random'

afterEach(() => vi.restoreAllMocks())

const macrotask = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * Seeded sequences against the write-ahead log: crashes, failed writes, two writers. Every case
 * names its seed and a repro command; `TIDEMARK_SEED` runs one seed, `TIDEMARK_RUNS` and
 * `TIDEMARK_STEPS` widen a run.
 */

/** Failure injection: the next `n` writes to `store` abort with QuotaExceededError. */
let failing: { store: string; n: number }[] = []
function installFaults(): void {
  for (const method of ['add', 'put', 'delete'] as const) {
    const original = FakeObjectStore.prototype[method] as (...args: unknown[]) => IDBRequest
    vi.spyOn(FakeObjectStore.prototype, method).mockImplementation(function (this: IDBObjectStore, ...args: unknown[]) {
      const request = original.apply(this, args)
      const fault = failing.find((f) => f.store === this.name && f.n > 0)
      if (fault !== undefined) {
        fault.n--
        ;(this.transaction as unknown as { _abort(name: string): void })._abort('QuotaExceededError')
      }
      return request
    })
  }
}

function present(engine: Engine): Map<number, number> {
  const seen = new Map<number, number>()
  for (const r of engine.results()) seen.set(r.start / 10, (seen.get(r.start / 10) ?? 0) + r.count)
  return seen
}

async function run(seed: number, steps: number): Promise<void> {
  const random = seededRandom(seed)
  const factory = new IDBFactory()
  const timers = new ManualTimers(1_000)
  const config: EngineOptions = { windows: tumbling(10), allowedLateness: 1e12, retention: 1e12, now: timers.read }
  failing = []
  installFaults()
  let claim = { held: true }
  const openOne = () =>
    openEngine({
      ...config,
      persistence: indexedDbPersistence({ name: 'fuzz', indexedDB: factory, claim, coalesce: random() < 0.7 }),
      checkpointEvery: { events: 1 + Math.floor(random() * 12) },
      writeRetry: { firstMs: 100, maxMs: 400 },
      timers,
    })
  let engine = await openOne()
  let seq = 0
  const acked = new Set<number>()
  const attempted = new Set<number>()
  const log: string[] = []
  for (let step = 0; step < steps; step++) {
    const r = random()
    if (r < 0.45) {
      const k = 1 + Math.floor(random() * 3)
      const events = Array.from({ length: k }, () => {
        seq++
        return { id: `d1-${seq}`, source: 'd1', seq, ts: seq * 10, value: 1 }
      })
      const receipt = engine.ingest(events)
      log.push(`ingest ${events[0]?.seq}-${seq} accepted ${receipt.accepted}`)
      if (receipt.accepted > 0) for (const e of events) attempted.add(e.seq)
      receipt.durable.then(
        () => {
          for (const e of events) acked.add(e.seq)
        },
        () => {},
      )
    } else if (r < 0.55) {
      const store = random() < 0.5 ? 'wal' : random() < 0.5 ? 'checkpoints' : 'lateLane'
      failing.push({ store, n: 1 })
      log.push(`fail next ${store}`)
    } else if (r < 0.65) {
      timers.advance(100 + Math.floor(random() * 400))
      log.push('advance')
    } else if (r < 0.85) {
      const n = 1 + Math.floor(random() * 3)
      for (let i = 0; i < n; i++) await macrotask()
      log.push(`settle ${n}`)
    } else if (r < 0.92) {
      // Crash: the old tab's writes stop at once; transactions already under way still commit.
      claim.held = false
      claim = { held: true }
      failing = []
      for (let i = 0; i < Math.floor(random() * 3); i++) await macrotask()
      const ackedAtCrash = new Set(acked)
      engine = await openOne()
      const seen = present(engine)
      log.push(`crash: acked ${ackedAtCrash.size}`)
      for (const s of ackedAtCrash) {
        if (seen.get(s) !== 1) throw new Error(`seed ${seed}: acknowledged seq ${s} has count ${seen.get(s)} after crash at step ${step}\n${log.join('\n')}`)
      }
      for (const [s, c] of seen) {
        if (c !== 1 || !attempted.has(s)) throw new Error(`seed ${seed}: seq ${s} counted ${c} (attempted ${attempted.has(s)}) after crash at step ${step}\n${log.join('\n')}`)
      }
      // What the new engine holds is what the producer resumes from: forget the rest.
      attempted.clear()
      acked.clear()
      for (const s of seen.keys()) {
        attempted.add(s)
        acked.add(s)
      }
    } else {
      // Clean close and reopen.
      failing = []
      await engine.close()
      engine = await openOne()
      const seen = present(engine)
      for (const s of acked) if (seen.get(s) !== 1) throw new Error(`seed ${seed}: acknowledged seq ${s} has count ${seen.get(s)} after close at step ${step}\n${log.join('\n')}`)
      log.push('close/reopen')
      attempted.clear()
      acked.clear()
      for (const s of seen.keys()) {
        attempted.add(s)
        acked.add(s)
      }
    }
  }
}

/**
 * One test per seed: `always`, then 1..`TIDEMARK_RUNS` (20 by default); `TIDEMARK_SEED` runs that
 * one alone. Each names its repro command; `TIDEMARK_STEPS` (200) lengthens a run.
 */
function seeded(name: string, body: (seed: number, steps: number) => Promise<void>, always: readonly number[] = []): void {
  const seeds = process.env.TIDEMARK_SEED ? [Number(process.env.TIDEMARK_SEED)] : [...always, ...Array.from({ length: Number(process.env.TIDEMARK_RUNS ?? 20) }, (_, i) => i + 1)]
  for (const seed of seeds) {
    it(`${name} seed ${seed} (repro: TIDEMARK_SEED=${seed} npx vitest run --project idb packages/idb/test/walSequences.test.ts -t "${name} seed ${seed} ")`, () => body(seed, Number(process.env.TIDEMARK_STEPS ?? 200)), 60_000)
  }
}

describe('crashes and failed writes in seeded random order', () => {
  seeded('crash', run)
})


async function exact(seed: number, steps: number): Promise<void> {
  const random = seededRandom(seed)
  const factory = new IDBFactory()
  const timers = new ManualTimers(1_000)
  const config: EngineOptions = {
    windows: tumbling(10),
    allowedLateness: 5,
    retention: 40,
    limits: { maxLateEvents: 1 + Math.floor(random() * 6) },
    now: timers.read,
  }
  failing = []
  installFaults()
  let claim = { held: true }
  const useArchive = random() < 0.5
  const archiveLimit = 100_000
  const checkpointEvents = 1 + Math.floor(random() * 6)
  let persistence = indexedDbPersistence({ name: 'exact', indexedDB: factory, claim })
  const openOne = () => {
    persistence = indexedDbPersistence({ name: 'exact', indexedDB: factory, claim, ...(useArchive ? { archive: finalArchive({ limit: archiveLimit }) } : {}) })
    return openEngine({ ...config, persistence, checkpointEvery: { events: checkpointEvents }, writeRetry: { firstMs: 100, maxMs: 400 }, timers })
  }
  let engine = await openOne()
  const seqs = new Map<string, number>()
  const log: string[] = []
  for (let step = 0; step < steps; step++) {
    const r = random()
    if (r < 0.5) {
      const k = 1 + Math.floor(random() * 3)
      const events = Array.from({ length: k }, () => {
        const source = random() < 0.7 ? 'd1' : 'd2'
        const seq = (seqs.get(source) ?? 0) + 1
        seqs.set(source, seq)
        const ts = Math.max(0, timers.now - 1_000 + Math.floor(random() * 60) - 40)
        return { id: `${source}-${seq}`, source, seq, ts, value: seq, key: random() < 0.5 ? 'a' : 'b' }
      })
      engine.ingest(events).durable.catch(() => {})
      log.push(`ingest ${JSON.stringify(events.map((e) => [e.source, e.seq, e.ts]))}`)
    } else if (r < 0.58) {
      const store = ['checkpoints', 'lateLane', 'archive', 'wal'][Math.floor(random() * 4)] as string
      failing.push({ store, n: 1 })
      log.push(`fail next ${store}`)
    } else if (r < 0.7) {
      timers.advance(1 + Math.floor(random() * 30))
      engine.tick()
      log.push(`advance+tick to ${timers.now}`)
    } else if (r < 0.85) {
      await macrotask()
      log.push('settle')
    } else {
      // Make everything durable (a checkpoint retry may be pending), then crash and compare.
      failing = []
      let durable = false
      for (let attempt = 0; attempt < 10 && !durable; attempt++) {
        timers.advance(1_000)
        for (let i = 0; i < 5; i++) await macrotask()
        durable = await whenDurable(engine).then(
          () => true,
          () => false,
        )
      }
      if (!durable) throw new Error(`seed ${seed}: the engine never became writable again after failures (step ${step})\n${log.slice(-40).join('\n')}`)
      const before = visibleState(engine)
      const archived = useArchive ? await persistence.archive() : null
      const clean = random() < 0.3
      if (clean) await engine.close()
      else {
        claim.held = false
        claim = { held: true }
      }
      engine = await openOne()
      log.push(clean ? 'close/reopen' : 'crash')
      const after = visibleState(engine)
      const { anomalies: a1, ...s1 } = before.stats
      const { anomalies: a2, ...s2 } = after.stats
      const mismatch = JSON.stringify({ ...before, stats: s1 }) !== JSON.stringify({ ...after, stats: s2 })
      if (mismatch) {
        expect(after).toEqual(before)
        expect({ seed, step, log: log.slice(-40) }).toBeUndefined()
      }
      if (JSON.stringify(a1) !== JSON.stringify({ ...a2, corrupt_record: a1.corrupt_record })) {
        expect({ seed, step, a1, a2, log: log.slice(-40) }).toBeUndefined()
      }
      if (archived !== null) {
        const now = await persistence.archive()
        if (JSON.stringify(now) !== JSON.stringify(archived)) {
          expect(now).toEqual(archived)
          expect({ seed, step, log: log.slice(-40) }).toBeUndefined()
        }
      }
    }
  }
}

describe('exact recovery with the late lane, the archive and failing checkpoints, in seeded random order', () => {
  seeded('exact', exact)
})

async function twoWriters(seed: number, steps: number): Promise<void> {
  const random = seededRandom(seed)
  const factory = new IDBFactory()
  const timers = new ManualTimers(1_000)
  const config: EngineOptions = { windows: tumbling(10), allowedLateness: 1e12, retention: 1e12, now: timers.read }
  failing = []
  installFaults()
  const log: string[] = []
  let opened = 0
  const openOne = () => {
    const persistence = indexedDbPersistence({ name: 'two', indexedDB: factory, coalesce: random() < 0.7 })
    const id = opened++
    const append = persistence.append.bind(persistence)
    const checkpoint = persistence.checkpoint.bind(persistence)
    persistence.append = (op) => {
      const p = append(op)
      const lsn = persistence.lastLsn
      log.push(`  [p${id}] append lsn ${lsn} called`)
      const what = op.kind === 'ingest' ? `ingest ${op.events.map((e) => e.ts).join(',')}` : op.kind
      p.then(
        () => log.push(`  [p${id}] append lsn ${lsn} (${what}) committed`),
        (e: Error) => log.push(`  [p${id}] append lsn ${lsn} (${what}) failed: ${e.message.slice(0, 140)}`),
      )
      return p
    }
    persistence.checkpoint = (c) => {
      log.push(`  [p${id}] checkpoint ${c.upToLsn} called`)
      const p = checkpoint(c)
      p.then(
        () => log.push(`  [p${id}] checkpoint ${c.upToLsn} committed`),
        (e: Error) => log.push(`  [p${id}] checkpoint ${c.upToLsn} failed: ${e.message.slice(0, 140)}`),
      )
      return p
    }
    return openEngine({
      ...config,
      persistence,
      checkpointEvery: { events: 1 + Math.floor(random() * 8) },
      writeRetry: { firstMs: 100, maxMs: 400 },
      timers,
    })
  }
  const engines: Engine[] = [await openOne()]
  const acked = new Map<number, string>()
  let next = 0
  for (let step = 0; step < steps; step++) {
    const r = random()
    if (r < 0.5) {
      const which = Math.floor(random() * engines.length)
      const engine = engines[which] as Engine
      const k = 1 + Math.floor(random() * 3)
      const events = Array.from({ length: k }, () => {
        next++
        return { id: `e-${next}`, source: `s${which}-${next}`, seq: 1, ts: next * 10, value: 1 }
      })
      const receipt = engine.ingest(events)
      log.push(`engine ${which} ingest ${events[0]?.ts}-${next * 10}: accepted ${receipt.accepted}`)
      receipt.durable.then(
        () => {
          for (const e of events) acked.set(e.ts / 10, `engine ${which} step ${step}`)
        },
        () => {},
      )
    } else if (r < 0.58) {
      failing.push({ store: random() < 0.5 ? 'wal' : 'checkpoints', n: 1 })
      log.push('fail next')
    } else if (r < 0.68) {
      timers.advance(100 + Math.floor(random() * 400))
      log.push('advance')
    } else if (r < 0.9) {
      await macrotask()
      log.push('settle')
    } else if (engines.length < 3) {
      engines.push(await openOne())
      log.push(`open engine ${engines.length - 1}`)
    }
  }
  failing = []
  for (let i = 0; i < 10; i++) await macrotask()
  const check = await openOne()
  const seen = new Map<number, number>()
  for (const result of check.results()) seen.set(result.start / 10, (seen.get(result.start / 10) ?? 0) + result.count)
  for (const [n, who] of acked) {
    if (seen.get(n) !== 1) {
      expect({ seed, missing: n, who, count: seen.get(n), report: recoveryReport(check), log }).toBeUndefined()
    }
  }
  for (const [n, c] of seen) if (c !== 1) expect({ seed, n, c, log }).toBeUndefined()
}


describe('two writers on one database, in seeded random order', () => {
  // 151 and 224 lost acknowledged records when a checkpoint truncated another handle's records.
  seeded('two', twoWriters, [151, 224])
})
