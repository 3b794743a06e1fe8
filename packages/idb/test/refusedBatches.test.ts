/**
 * Batches refused whole (over `limits.maxBatch`, or while the log refuses writes) were never
 * accepted: recovery must not apply them, but it must show the same counts (`ingested`,
 * `anomalies.overflow`) as the engine before the crash. Found by the crash-and-replay fuzz
 * campaign: such batches used to be left out of the log, so their counts vanished on reload.
 */
import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type Engine, type EngineOptions, type StreamEvent, tumbling } from '@tidemark/engine'
import { indexedDbPersistence, openEngine, type OpenEngineOptions, QuotaError } from '@tidemark/idb'
import { memoryPersistence } from '@tidemark/idb/memory'
import { ManualTimers, reading, visibleState } from '@tidemark/engine/testing'
import { checkpointWrites, fillDisk } from './fakeStorage.ts'

afterEach(() => {
  vi.restoreAllMocks()
})

const clock = { now: 1_000 }
const config: EngineOptions = { windows: tumbling(10), allowedLateness: 10, now: () => clock.now, limits: { maxBatch: 4 } }

function batch(from: number, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => reading('d1', from + i, 3 * (from + i), from + i))
}

function open(factory: IDBFactory, name: string, extra: Partial<OpenEngineOptions> = {}): Promise<Engine> {
  return openEngine({ ...config, persistence: indexedDbPersistence({ name, indexedDB: factory }), ...extra })
}

describe('batches refused whole, after a crash', () => {
  it('shows the same counts as before the crash, and applies nothing of the refused batch', async () => {
    const factory = new IDBFactory()
    const live = await open(factory, 'over-max-batch')
    await live.ingest(batch(1, 3)).durable
    const refused = live.ingest(batch(4, 6))
    expect(refused).toMatchObject({ accepted: 0, rejected: 6 })
    await refused.durable
    expect(live.stats()).toMatchObject({ ingested: 9, applied: 3 })
    expect(live.stats().anomalies.overflow).toBe(6)
    // A crash: a second engine on the same database, the first never closed.
    const crashed = await open(factory, 'over-max-batch')
    expect(visibleState(crashed)).toEqual(visibleState(live))
    // The refused events were never accepted: the producer sends them again, and they are new.
    expect(crashed.ingest(batch(4, 3))).toMatchObject({ accepted: 3, duplicates: 0 })
  })

  it('counts the refusal once however often the log is replayed (memoryPersistence, several reopens)', async () => {
    const persistence = memoryPersistence({ checkpointEvery: { events: 1_000 } })
    const first = await openEngine({ ...config, persistence, checkpointOnClose: false })
    first.ingest(batch(1, 2))
    await first.ingest(batch(3, 5)).durable
    await persistence.close()
    const second = await openEngine({ ...config, persistence, checkpointOnClose: false })
    expect(visibleState(second)).toEqual(visibleState(first))
    await second.ingest(batch(3, 9)).durable
    await persistence.close()
    const third = await openEngine({ ...config, persistence })
    expect(visibleState(third)).toEqual(visibleState(second))
    expect(third.stats().anomalies.overflow).toBe(5 + 9)
    expect(third.stats().ingested).toBe(2 + 5 + 9)
  })

  it('keeps the counts of batches refused while the disk was full, once the retried checkpoint committed', async () => {
    const timers = new ManualTimers()
    const factory = new IDBFactory()
    const persistence = indexedDbPersistence({ name: 'refused-while-full', indexedDB: factory })
    const checkpoints = checkpointWrites(persistence)
    const live = await openEngine({ ...config, persistence, writeRetry: { firstMs: 1_000, maxMs: 1_000 }, timers })
    await live.ingest(batch(1, 2)).durable
    const free = fillDisk()
    await expect(live.ingest(batch(3, 2)).durable).rejects.toBeInstanceOf(QuotaError)
    const refused = live.ingest(batch(5, 3))
    expect(refused).toMatchObject({ accepted: 0, rejected: 3 })
    await expect(refused.durable).rejects.toBeInstanceOf(QuotaError)
    free()
    timers.advance(1_000)
    expect(checkpoints).toHaveLength(1)
    await checkpoints[0]
    await live.ingest([]).durable
    const crashed = await open(factory, 'refused-while-full')
    expect(visibleState(crashed)).toEqual(visibleState(live))
    expect(crashed.stats().anomalies.overflow).toBe(3)
  })
})
