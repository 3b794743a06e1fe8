/**
 * The late lane and the final-window archive beside the log: the `lateLane` store holds the
 * engine's late lane (written with each checkpoint, trimmed with the lane's bound), the
 * `archive` store, with `archive: finalArchive()`, every final window result (read with
 * `persistence.archive(query)`, also after the window left live state), both bounded, both
 * recovered exactly after a crash.
 */
import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import { describe, expect, it } from 'vitest'
import {
  createEngine,
  type EngineOptions,
  type StreamEvent,
  type TidemarkEngine,
  tumbling,
  type WindowResult,
} from '@tidemark/engine'
import {
  indexedDbPersistence,
  openEngine,
  type Persistence,
  recoveryReport,
} from '@tidemark/idb'
import { type FinalArchiveOptions, finalArchive } from '@tidemark/idb/archive'
import { memoryPersistence } from '@tidemark/idb/memory'
import { reading, visibleState, whenDurable } from '@tidemark/engine/testing'
import { decodeEngineCheckpoint, encodeEngineCheckpoint } from '../src/checkpoint/checkpointCodec.ts'
import { checkpointWrites, damage, raw } from './fakeStorage.ts'

const config: EngineOptions = { windows: tumbling(10), retention: 20, now: () => 1_000, limits: { maxLateEvents: 6 } }

/** One device, one reading per time unit; `late` readings land in the window [0, 10), final long ago. */
class Device {
  #seq = 0
  readings(from: number, to: number): StreamEvent[] {
    const out: StreamEvent[] = []
    for (let ts = from; ts < to; ts++) out.push(reading('d1', ++this.#seq, ts, ts))
    return out
  }
  late(count: number): StreamEvent[] {
    return Array.from({ length: count }, () => reading('d1', ++this.#seq, 1, -1))
  }
}

/** A persistence under test and how to get at the same storage again, as a crash or reload would. */
interface Subject {
  readonly name: string
  /** `archive`: the options of its `finalArchive()`; none without. */
  create(options?: { checkpointEvery?: { events: number }; archive?: FinalArchiveOptions }): {
    persistence: Persistence
    /** A handle on the same storage, as the next page load would make (the old one is dropped, not closed). */
    crash(): Promise<Persistence>
  }
}

const subjects: Subject[] = [
  {
    name: 'memoryPersistence',
    create({ checkpointEvery, archive } = {}) {
      const persistence = memoryPersistence({
        ...(checkpointEvery === undefined ? {} : { checkpointEvery }),
        ...(archive === undefined ? {} : { archive: finalArchive(archive) }),
      })
      return {
        persistence,
        crash: async () => {
          await persistence.close()
          return persistence
        },
      }
    },
  },
  {
    name: 'indexedDbPersistence',
    create({ checkpointEvery, archive } = {}) {
      const factory = new IDBFactory()
      const make = () =>
        indexedDbPersistence({
          name: 'history',
          indexedDB: factory,
          ...(checkpointEvery === undefined ? {} : { checkpointEvery }),
          ...(archive === undefined ? {} : { archive: finalArchive(archive) }),
        })
      return { persistence: make(), crash: async () => make() }
    },
  },
]

describe.each(subjects)('$name: late lane store', (subject) => {
  it('holds the lane written with each checkpoint, trimmed with its bound, and restores it after a crash', async () => {
    const { persistence, crash } = subject.create({ checkpointEvery: { events: 8 } })
    const engine = await openEngine({ ...config, persistence })
    const device = new Device()
    engine.ingest(device.readings(0, 20))
    for (let i = 0; i < 5; i++) {
      engine.ingest([...device.late(2), ...device.readings(20 + 4 * i, 24 + 4 * i)])
      await whenDurable(engine)
    }
    expect(engine.stats()).toMatchObject({ lateLane: 6, lateLaneTrimmed: 4, beyondLateness: 10 })
    // Stored: the lane plus at most one record's worth of trimmed entries, in few records.
    const stored = persistence.stats()
    expect(stored.lateLaneEntries).toBeGreaterThanOrEqual(6)
    expect(stored.lateLaneEntries).toBeLessThan(6 + 10)
    expect(stored.lateLaneRecords).toBeLessThanOrEqual(5)
    const recovered = await openEngine({ ...config, persistence: await crash() })
    expect(recoveryReport(recovered)?.corrupt).toEqual([])
    expect(visibleState(recovered)).toEqual(visibleState(engine))
  })

  it('keeps late events out of the checkpoint state', async () => {
    const { persistence, crash } = subject.create()
    const engine = await openEngine({ ...config, persistence })
    const device = new Device()
    engine.ingest(device.readings(0, 30))
    engine.ingest(device.late(4))
    await engine.close()
    const again = await crash()
    const { checkpoint } = await again.open()
    const state = decodeEngineCheckpoint(checkpoint?.state as Uint8Array) as ReturnType<typeof decodeEngineCheckpoint> & { lateLaneInStore?: number }
    expect(state.lateLane).toEqual({ entries: [], trimmed: 0, total: 4 })
    expect(state.lateLaneInStore).toBe(4)
    await again.close()
    const reopened = await openEngine({ ...config, persistence: again })
    expect(reopened.lateEvents()).toEqual(engine.lateEvents())
  })

  it('compacts many small records into one', async () => {
    const { persistence } = subject.create({ checkpointEvery: { events: 1 } })
    const engine = await openEngine({ ...config, limits: { maxLateEvents: 100 }, persistence })
    const device = new Device()
    engine.ingest(device.readings(0, 20))
    for (let i = 0; i < 40; i++) {
      engine.ingest(device.late(1))
      await whenDurable(engine)
    }
    await engine.close()
    expect(persistence.stats().lateLaneEntries).toBe(40)
    expect(persistence.stats().lateLaneRecords).toBeLessThanOrEqual(16)
  })

  it('rewrites the store as one record at the checkpoint after it holds 16', async () => {
    const { persistence } = subject.create({ checkpointEvery: { events: 1 } })
    const checkpoints = checkpointWrites(persistence)
    const engine = await openEngine({ ...config, limits: { maxLateEvents: 100 }, persistence })
    const device = new Device()
    engine.ingest(device.readings(0, 20))
    const records: number[] = []
    for (let i = 0; i < 18; i++) {
      engine.ingest(device.late(1))
      await whenDurable(engine)
      // The checkpoint that entry called for, committed.
      await Promise.all(checkpoints)
      records.push(persistence.stats().lateLaneRecords)
    }
    // One record per checkpoint's new entry, until the store holds 16: the next writes the lane whole.
    expect(records).toEqual([...Array.from({ length: 16 }, (_, i) => i + 1), 1, 2])
    expect(persistence.stats().lateLaneEntries).toBe(18)
  })
})

describe.each(subjects)('$name: final-window archive', (subject) => {
  it('keeps final results after windows leave live state, and answers queries like results()', async () => {
    const { persistence } = subject.create({ archive: {} })
    const engine = await openEngine({ ...config, persistence })
    const device = new Device()
    const finals: WindowResult[] = []
    engine.subscribe((changes) => {
      for (const change of changes) if (change.result.final) finals.push(change.result)
    })
    engine.ingest(device.readings(0, 100))
    engine.ingest(device.readings(100, 101))
    // W = 100, retention 20: windows ending at 80 or before left live state.
    expect(engine.results().map((r) => r.start)).toEqual([80, 90, 100])
    const archived = await persistence.archive()
    expect(archived.map((r) => r.start)).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90])
    expect(archived).toEqual(finals)
    expect(archived.every((r) => r.final && r.count === 10)).toBe(true)
    expect((await persistence.archive({ from: 20, to: 50 })).map((r) => r.start)).toEqual([20, 30, 40])
    expect(await persistence.archive({ key: 'other' })).toEqual([])
    expect(await persistence.archive({ window: 'tumbling:10', key: '' })).toEqual(archived)
  })

  it('survives close and reopen, and a crash before any checkpoint wrote it (replay derives it again)', async () => {
    const { persistence, crash } = subject.create({ checkpointEvery: { events: 50 }, archive: {} })
    const checkpoints = checkpointWrites(persistence)
    const engine = await openEngine({ ...config, persistence })
    const device = new Device()
    // 50 events call for a checkpoint, started right after the ingest that logged them.
    await engine.ingest(device.readings(0, 50)).durable
    expect(checkpoints).toHaveLength(1)
    await checkpoints[0]
    expect(persistence.stats().checkpoints).toBe(1)
    engine.ingest(device.readings(50, 60))
    await whenDurable(engine)
    // The checkpoint after 50 events wrote the windows final by then ([0, 40)); [40, 50) is only staged.
    expect(persistence.stats()).toMatchObject({ archiveRecords: 1, archivedChanges: 5 })
    const expected = await persistence.archive()
    expect(expected.map((r) => r.start)).toEqual([0, 10, 20, 30, 40])
    const recovered = await crash()
    const reopened = await openEngine({ ...config, persistence: recovered })
    expect(await recovered.archive()).toEqual(expected)
    await reopened.close()
    const again = await crash()
    await openEngine({ ...config, persistence: again })
    expect(await again.archive()).toEqual(expected)
    expect(again.stats()).toMatchObject({ archivedChanges: 5, archiveRotated: 0 })
  })

  it('rotates: keeps the newest changes within its limit, oldest records first, and counts what it dropped', async () => {
    const { persistence, crash } = subject.create({ checkpointEvery: { events: 10 }, archive: { limit: 4 } })
    const engine = await openEngine({ ...config, persistence })
    const device = new Device()
    for (let t = 0; t < 100; t += 10) {
      engine.ingest(device.readings(t, t + 10))
      await whenDurable(engine)
    }
    const starts = (await persistence.archive()).map((r) => r.start)
    expect(starts.length).toBeLessThanOrEqual(4)
    expect(starts.at(-1)).toBe(80)
    expect(starts).toEqual([...starts].sort((a, b) => a - b))
    expect(persistence.stats().archiveRotated).toBe(9 - starts.length)
    await engine.close()
    const again = await crash()
    await openEngine({ ...config, persistence: again })
    expect((await again.archive()).map((r) => r.start)).toEqual(starts)
    expect(again.stats().archiveRotated).toBe(9 - starts.length)
  })

  it('is opt-in: without one, archive() says so, nothing is staged and the stats count nothing', async () => {
    const { persistence } = subject.create()
    expect(persistence.archiveFinal).toBeUndefined()
    const engine = await openEngine({ ...config, persistence })
    engine.ingest(new Device().readings(0, 50))
    await expect(persistence.archive()).rejects.toThrow(/no archive configured; pass archive: finalArchive\(\) from @tidemark\/idb\/archive to keep final windows/)
    await engine.close()
    await persistence.open()
    expect(persistence.stats()).toMatchObject({ archivedChanges: 0, archiveRecords: 0, archiveRotated: 0 })
  })
})

describe('indexedDbPersistence: history stores on disk', () => {
  it('writes the lane and the archive as few large records, in the checkpoint transaction', async () => {
    const factory = new IDBFactory()
    const persistence = indexedDbPersistence({ name: 'disk', indexedDB: factory, archive: finalArchive() })
    const engine = await openEngine({ ...config, limits: { maxLateEvents: 1_000 }, persistence })
    const device = new Device()
    for (let i = 0; i < 10; i++) engine.ingest([...device.readings(100 * i, 100 * i + 100), ...device.late(50)])
    await engine.close()
    const db = await raw(factory, 'disk')
    expect(await db.getAllKeys('lateLane')).toEqual([0])
    expect(await db.getAllKeys('archive')).toEqual([[1, 99, 0, 980]])
    db.close()
  })

  it('leaves archive records alone while opened without an archive, and finds them again with one', async () => {
    const factory = new IDBFactory()
    const open = (archive: boolean) =>
      openEngine({ ...config, persistence: indexedDbPersistence({ name: 'kept', indexedDB: factory, ...(archive ? { archive: finalArchive() } : {}) }) })
    const device = new Device()
    const first = await open(true)
    first.ingest(device.readings(0, 50))
    await first.close()
    // Windows that turn final now are not archived: [40, 50) stays out.
    const without = await open(false)
    without.ingest(device.readings(50, 60))
    await without.close()
    const db = await raw(factory, 'kept')
    expect(await db.getAllKeys('archive')).toEqual([[1, 4, 0, 30]])
    db.close()
    const persistence = indexedDbPersistence({ name: 'kept', indexedDB: factory, archive: finalArchive() })
    await openEngine({ ...config, persistence })
    expect((await persistence.archive()).map((r) => r.start)).toEqual([0, 10, 20, 30])
  })

  it('reports a damaged late-lane record without calling it a loss of events, and repairs the store', async () => {
    const factory = new IDBFactory()
    const open = () => openEngine({ ...config, persistence: indexedDbPersistence({ name: 'damaged-lane', indexedDB: factory }) })
    const engine = await open()
    const device = new Device()
    engine.ingest(device.readings(0, 30))
    engine.ingest(device.late(3))
    await engine.close()
    await damage(factory, 'damaged-lane', 'lateLane', 0, (bytes) => bytes.length - 1)
    const reopened = await open()
    const report = recoveryReport(reopened)
    expect(report?.corrupt.map((c) => c.store)).toEqual(['lateLane', 'lateLane'])
    expect(report?.corrupt[0]).toMatchObject({ reason: 'payload checksum mismatch' })
    expect(report).toMatchObject({ lostEvents: 0, lossUnknown: false })
    expect(reopened.lateEvents()).toEqual([])
    expect(reopened.results()).toEqual(engine.results())
    // The open checkpointed at once: the store matches the lane again.
    const clean = await open()
    expect(recoveryReport(clean)?.corrupt).toEqual([])
  })

  it('after a damaged checkpoint, rewrites the lane whole: stored entries of the lost history never take the numbers of new ones', async () => {
    const factory = new IDBFactory()
    const open = () => openEngine({ ...config, persistence: indexedDbPersistence({ name: 'lane-after-damage', indexedDB: factory }) })
    const device = new Device()
    const first = await open()
    first.ingest(device.readings(0, 30))
    first.ingest(device.late(2))
    // Checkpointed: the store holds late-lane entries 0 and 1.
    await first.close()
    const second = await open()
    // The tail after that checkpoint: on an engine replaying it from scratch, its late events are entries 0 to 2.
    second.ingest(device.readings(30, 60))
    second.ingest(device.late(3))
    await whenDurable(second)
    // The tab crashes, then the checkpoint is damaged: recovery replays the tail alone.
    const [key] = await (await raw(factory, 'lane-after-damage')).getAllKeys('checkpoints')
    await damage(factory, 'lane-after-damage', 'checkpoints', key as number, (bytes) => bytes.length - 1)
    const recovered = await open()
    expect(recoveryReport(recovered)).toMatchObject({ checkpointLsn: null, lossUnknown: true })
    const lane = recovered.lateEvents()
    expect(lane.map((entry) => entry.event.seq)).toEqual([63, 64, 65])
    // The next open reads the lane the recovered engine held, each entry once, in order.
    const reopened = await open()
    expect(recoveryReport(reopened)?.corrupt).toEqual([])
    expect(reopened.lateEvents()).toEqual(lane)
    reopened.ingest(device.late(1))
    await reopened.close()
    const db = await raw(factory, 'lane-after-damage')
    expect(await db.getAllKeys('lateLane')).toEqual([0, 3])
    db.close()
    expect((await open()).lateEvents().map((entry) => entry.event.seq)).toEqual([63, 64, 65, 66])
  })

  it('refuses a checkpoint that does not say how many late-lane entries its store holds, naming the lsn', async () => {
    const persistence = memoryPersistence()
    await persistence.open()
    const engine = createEngine(config) as TidemarkEngine
    engine.ingest(new Device().readings(0, 30))
    // The engine's own checkpoint, without what openEngine adds: the lane is inline, its store empty.
    await persistence.checkpoint({ upToLsn: 0, state: encodeEngineCheckpoint(engine.checkpoint()) })
    await persistence.close()
    await expect(openEngine({ ...config, persistence })).rejects.toThrow(
      /checkpoint at lsn 0 cannot be read \(it does not say how many late-lane entries are in the lateLane store\)/,
    )
  })
})

describe('FinalArchive', () => {
  const result = (start: number, revision = 0): WindowResult => ({
    window: 'tumbling:10',
    key: 'k',
    start,
    end: start + 10,
    count: 1,
    sum: revision,
    min: 0,
    max: 0,
    mean: revision,
    status: revision === 0 ? 'on_time' : 'corrected',
    revision,
    final: true,
    basis: 'derived',
    pane: { timing: revision === 0 ? 'on_time' : 'late', index: revision, onTimeIndex: revision },
  })

  /** An archive over a Map, as a persistence would keep its records. */
  function archiveOver(limit: number) {
    const archive = finalArchive({ limit })
    const stored = new Map<number, Uint8Array>()
    const get = async (keys: readonly (readonly number[])[]) => keys.map((key) => stored.get(key[0] as number))
    const checkpoint = () => {
      const write = archive.plan()
      for (const { key, bytes } of write?.put ?? []) stored.set(key[0], bytes)
      for (const key of write?.remove ?? []) stored.delete(key[0])
      write?.applied()
      return write
    }
    return { archive, read: (query?: { from?: number }) => archive.read(query, get), checkpoint }
  }

  it('keeps the latest change per window, and a retraction hides the window', async () => {
    const { archive, read, checkpoint } = archiveOver(10)
    archive.stage({ type: 'final', result: result(0) })
    archive.stage({ type: 'final', result: result(10) })
    expect(checkpoint()?.put.map((p) => p.key)).toEqual([[1, 2, 0, 10]])
    // A peer's late cell corrected a final window (a finality violation); another was merged away.
    archive.stage({ type: 'final', result: result(0, 1) })
    archive.stage({ type: 'retract', result: result(10) })
    expect(await read()).toEqual([result(0, 1)])
    expect(await read({ from: 5 })).toEqual([])
    checkpoint()
    expect(await read()).toEqual([result(0, 1)])
    expect(archive).toMatchObject({ records: 2, changes: 4, rotated: 0 })
  })

  it('drops the oldest staged changes past the limit, and counts them', async () => {
    const { archive, read } = archiveOver(3)
    for (let start = 0; start < 50; start += 10) archive.stage({ type: 'final', result: result(start) })
    expect((await read()).map((r) => r.start)).toEqual([20, 30, 40])
    expect(archive).toMatchObject({ changes: 3, rotated: 2 })
  })
})
