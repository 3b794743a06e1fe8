/**
 * Records stored where this library never leaves one (bad input: a hand-edited or foreign
 * record): under a key that is not an lsn, or in the log at or behind the checkpoint.
 * docs/durability.md#corruption: "Corrupt records are detected ..., skipped, and reported ...
 * The engine serves what survived and checkpoints at once, so the damaged records are gone from
 * the next open. Nothing throws." (bad-input B33: skipped and reported; the records around it are
 * recovered).
 */
import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { Engine, EngineOptions, StreamEvent } from '@tidemark/engine'
import { tumbling } from '@tidemark/engine'
import { ManualTimers, reading } from '@tidemark/engine/testing'
import { encodeWalRecord, indexedDbPersistence, openEngine, type OpenEngineOptions, recoveryReport } from '../src/index.ts'
import { checkpointWrites, raw } from './fakeStorage.ts'
import { ingestOp } from './walOps.ts'

afterEach(() => {
  vi.restoreAllMocks()
})

const config: EngineOptions = { windows: tumbling(10), allowedLateness: 10, now: () => 1_000 }

function batch(from: number, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => reading('d1', from + i, 3 * (from + i), from + i))
}

function open(factory: IDBFactory, name: string, extra: Partial<OpenEngineOptions> = {}): Promise<Engine> {
  return openEngine({ ...config, persistence: indexedDbPersistence({ name, indexedDB: factory }), ...extra })
}

async function seed(factory: IDBFactory, name: string, key: IDBValidKey): Promise<void> {
  const live = await open(factory, name)
  await live.ingest(batch(1, 2)).durable
  await live.close()
  const db = await raw(factory, name)
  // A stray record: a copy of a valid log record, put under a key that is not its lsn.
  await db.put('wal', encodeWalRecord(7, ingestOp(batch(50, 1))).buffer, key)
  db.close()
}

describe('a record under a key where the library leaves none', () => {
  it('key 0: reported at open and the engine keeps logging, instead of being ignored and then fencing the engine at its first checkpoint', async () => {
    const factory = new IDBFactory()
    await seed(factory, 'stray-zero', 0)
    const persistence = indexedDbPersistence({ name: 'stray-zero', indexedDB: factory })
    const checkpoints = checkpointWrites(persistence)
    const engine = await openEngine({ ...config, persistence, checkpointEvery: { events: 2 }, timers: new ManualTimers() })
    const corrupt = recoveryReport(engine)?.corrupt.length
    expect(recoveryReport(engine)?.corrupt).toEqual([
      { store: 'wal', key: '0', reason: 'stored under 0, which is not an lsn (a whole number >= 1)', kind: 'ingest', lostEvents: 1 },
    ])
    // Two events reach the cadence: the checkpoint is taken once the batch is recorded.
    await engine.ingest(batch(3, 2)).durable
    const checkpoint = await checkpoints[0]?.then(
      () => 'committed',
      (error: Error) => error.message,
    )
    const later = engine.ingest(batch(5, 1))
    expect({ corrupt, checkpoint, refused: later.anomalies.map((a) => a.reason) }).toEqual({ corrupt: 1, checkpoint: 'committed', refused: [] })
    await engine.close()
  })

  it('key 2.5: reported at open and the engine keeps logging, instead of refusing every later write', async () => {
    const factory = new IDBFactory()
    await seed(factory, 'stray-fraction', 2.5)
    const timers = new ManualTimers()
    const engine = await open(factory, 'stray-fraction', { timers })
    expect(recoveryReport(engine)?.corrupt.map((c) => c.reason)).toEqual(['stored under 2.5, which is not an lsn (a whole number >= 1)'])
    expect(engine.results().map((r) => r.count)).toEqual([2])
    // Documented: the engine serves what survived and logs new batches.
    await expect(engine.ingest(batch(3, 1)).durable).resolves.toBeUndefined()
    await engine.close()
  })

  it('a string key: removed by the checkpoint at open, so the next open is clean', async () => {
    const factory = new IDBFactory()
    await seed(factory, 'stray-string', '7')
    const engine = await open(factory, 'stray-string')
    expect(recoveryReport(engine)?.corrupt.map((c) => c.reason)).toEqual(['stored under "7", which is not an lsn (a whole number >= 1)'])
    await engine.close()
    const again = await open(factory, 'stray-string')
    expect(recoveryReport(again)?.corrupt).toEqual([])
    await again.close()
  })

  it('a log record at or behind the checkpoint (its state does not hold it): reported with what it lost, deleted by the checkpoint at open', async () => {
    const factory = new IDBFactory()
    const live = await open(factory, 'stray-behind')
    await live.ingest(batch(1, 2)).durable
    await live.ingest(batch(3, 1)).durable
    await live.close()
    const db = await raw(factory, 'stray-behind')
    const [upToLsn] = (await db.getAllKeys('checkpoints')) as number[]
    // A valid record under its own lsn, below the stored checkpoint: another handle's, written behind it.
    await db.put('wal', encodeWalRecord(1, ingestOp(batch(60, 2))).buffer, 1)
    db.close()
    expect(upToLsn).toBeGreaterThan(1)
    const engine = await open(factory, 'stray-behind')
    expect(recoveryReport(engine)?.corrupt).toEqual([
      { store: 'wal', key: '1', reason: `stored under lsn 1, at or behind the checkpoint at lsn ${upToLsn}, whose state does not hold it`, kind: 'ingest', lostEvents: 2 },
    ])
    await expect(engine.ingest(batch(4, 1)).durable).resolves.toBeUndefined()
    await engine.close()
    const again = await open(factory, 'stray-behind')
    expect(recoveryReport(again)?.corrupt).toEqual([])
    expect(again.results().reduce((n, r) => n + r.count, 0)).toBe(4)
    await again.close()
  })

  it('a checkpoint under a key that is not an lsn: reported, the valid checkpoint recovered, and deleted at open', async () => {
    const factory = new IDBFactory()
    const live = await open(factory, 'stray-checkpoint')
    await live.ingest(batch(1, 2)).durable
    await live.close()
    const db = await raw(factory, 'stray-checkpoint')
    const [key] = (await db.getAllKeys('checkpoints')) as number[]
    await db.put('checkpoints', await db.get('checkpoints', key as number), 'newest')
    db.close()
    const engine = await open(factory, 'stray-checkpoint')
    expect(recoveryReport(engine)?.corrupt.map((c) => [c.store, c.reason])).toEqual([['checkpoints', 'stored under "newest", which is not an lsn (a whole number >= 1)']])
    expect(engine.results().map((r) => r.count)).toEqual([2])
    await expect(engine.ingest(batch(3, 1)).durable).resolves.toBeUndefined()
    await engine.close()
    const again = await open(factory, 'stray-checkpoint')
    expect(recoveryReport(again)?.corrupt).toEqual([])
    await again.close()
  })
})
