/**
 * Sentences of docs/durability.md and of the @tidemark/idb README that no other test pinned,
 * each checked on the real persistences: the default write-retry backoff, a lost claim's
 * retried checkpoint, a damaged merge or archive record, an older checkpoint restored, how a
 * partial `checkpointEvery` and `close()` decide on checkpoints, the `coalesce` and
 * `durability` options, the archive's record size and a peer's change to a final window, a log
 * kept before its configuration was stored beside it, `engine.writable` on a full disk, and a
 * trigger and accumulation changed between two opens.
 */
import 'fake-indexeddb/auto'
import { IDBDatabase as FakeDatabase, IDBFactory } from 'fake-indexeddb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { afterProcessingTime, type CellEntry, createEngine, type Engine, type EngineOptions, manual, quantiles, type StreamEvent, tumbling } from '@tidemark/engine'
import { ManualTimers, reading, visibleState, whenDurable } from '@tidemark/engine/testing'
import {
  decodeWalRecord,
  indexedDbPersistence,
  isLogConfigurationError,
  isQuotaError,
  openEngine,
  type OpenEngineOptions,
  recoveryReport,
} from '../src/index.ts'
import { finalArchive } from '../src/archive.ts'
import { memoryPersistence } from '../src/memory.ts'
import { checkpointWrites, damage, fillDisk, raw } from './fakeStorage.ts'
import { ingestOp } from './walOps.ts'

afterEach(() => {
  vi.restoreAllMocks()
})

const config: EngineOptions = { windows: tumbling(10), allowedLateness: 10, now: () => 1_000 }

function batch(from: number, count: number, source = 'd1'): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => reading(source, from + i, 3 * (from + i), from + i))
}

function count(engine: Engine): number {
  return engine.results().reduce((sum, r) => sum + r.count, 0)
}

function open(factory: IDBFactory, name: string, extra: Partial<OpenEngineOptions> = {}): Promise<Engine> {
  return openEngine({ ...config, persistence: indexedDbPersistence({ name, indexedDB: factory }), ...extra })
}

describe('a full disk: the retried checkpoint', () => {
  it('is retried after 1 s, doubling up to 30 s, when writeRetry is left at its default', async () => {
    const timers = new ManualTimers()
    const persistence = indexedDbPersistence({ name: 'default-backoff', indexedDB: new IDBFactory() })
    const checkpoints = checkpointWrites(persistence)
    const engine = await openEngine({ ...config, persistence, timers })
    fillDisk()
    await expect(engine.ingest(batch(1, 2)).durable).rejects.toSatisfy(isQuotaError)
    const delays: number[] = []
    // The disk stays full: every retry fails and arms the next one, as far off as the backoff says.
    for (let attempt = 0; attempt < 7; attempt++) {
      const [delay] = timers.pending
      delays.push(delay as number)
      timers.advance(delay as number)
      await expect(checkpoints[attempt]).rejects.toSatisfy(isQuotaError)
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000])
    await engine.close()
    expect(timers.pending).toEqual([])
  })

  it('keeps failing, with backoff, after the tab lost its source claim, until the engine is closed', async () => {
    const timers = new ManualTimers()
    const claim = { held: true }
    const persistence = indexedDbPersistence({ name: 'lost-claim', indexedDB: new IDBFactory(), claim })
    const checkpoints = checkpointWrites(persistence)
    const engine = await openEngine({ ...config, persistence, timers, checkpointOnClose: false })
    await engine.ingest(batch(1, 1)).durable
    claim.held = false
    await expect(engine.ingest(batch(2, 1)).durable).rejects.toThrow(/no longer holds its source claim/)
    expect(timers.pending).toEqual([1_000])
    timers.advance(1_000)
    await expect(checkpoints[0]).rejects.toThrow(/no longer holds its source claim; checkpoint\(\) refused/)
    expect(timers.pending).toEqual([2_000])
    timers.advance(2_000)
    await expect(checkpoints[1]).rejects.toThrow(/no longer holds its source claim/)
    expect(timers.pending).toEqual([4_000])
    // Still blocked: nothing is acknowledged that cannot be written.
    expect(engine.ingest(batch(3, 1)).anomalies[0]).toMatchObject({ reason: 'overflow' })
    await engine.close()
    expect(timers.pending).toEqual([])
    expect(checkpoints).toHaveLength(2)
  })
})

describe('corruption beside the events', () => {
  it('a damaged merge record loses no events, and heals when peers sync again', async () => {
    const options = { windows: tumbling(60_000), watermark: manual(), now: () => 1_000 }
    const factory = new IDBFactory()
    const reopen = () => openEngine({ ...options, persistence: indexedDbPersistence({ name: 'damaged-merge', indexedDB: factory }) })
    const live = await reopen()
    await live.ingest([reading('d1', 1, 1_000, 4)]).durable
    const peer = createEngine({ ...options, replicaId: 'peer' })
    peer.ingest([reading('p1', 1, 2_000, 5), reading('p1', 2, 70_000, 6)])
    const { cells, clocks } = peer.replica.exportState()
    live.replica.mergeRemote(cells, clocks)
    await whenDurable(live)
    expect(count(live)).toBe(3)
    // The tab crashes (the engine is never closed), and a bad sector hits the merge record's payload.
    const db = await raw(factory, 'damaged-merge')
    const lsns = (await db.getAllKeys('wal')) as number[]
    const kinds = await Promise.all(lsns.map(async (lsn) => decodeWalRecord(new Uint8Array((await db.get('wal', lsn)) as ArrayBuffer))))
    db.close()
    const mergeLsn = lsns[kinds.findIndex((read) => read.ok && read.op.kind === 'merge')] as number
    await damage(factory, 'damaged-merge', 'wal', mergeLsn, (bytes) => bytes.length - 1)
    const recovered = await reopen()
    expect(recoveryReport(recovered)).toMatchObject({
      corrupt: [{ store: 'wal', key: String(mergeLsn), reason: 'payload checksum mismatch', kind: 'merge' }],
      lostEvents: 0,
      lossUnknown: false,
    })
    // The device's own event survived; the peers' cells are gone until peers sync again.
    expect(count(recovered)).toBe(1)
    const again = peer.replica.exportState()
    recovered.replica.mergeRemote(again.cells, again.clocks)
    expect(recovered.results()).toEqual(live.results())
  })

  it('a producer that resumes its numbering at nextSeq after a damaged ingest record has every later reading accepted', async () => {
    const factory = new IDBFactory()
    const name = 'damaged-ingest-resume'
    const live = await open(factory, name, { checkpointOnClose: false })
    // Seqs 1..7, one record each.
    for (let seq = 1; seq <= 7; seq++) await live.ingest([reading('d1', seq, seq, 1)]).durable
    const db = await raw(factory, name)
    const lsns = (await db.getAllKeys('wal')) as number[]
    db.close()
    // The tab crashes, and the record of seq 4 is damaged.
    await damage(factory, name, 'wal', lsns[3] as number, (bytes) => bytes.length - 1)
    const recovered = await open(factory, name)
    expect(recoveryReport(recovered)).toMatchObject({ lostEvents: 1 })
    // The lost record's seq stays taken: the gap-free prefix ends at 3, the next seq is 8.
    expect(recovered.replica.exportState().clocks.find((c) => c.source === 'd1')?.prefix).toBe(3)
    expect(recovered.nextSeq('d1')).toBe(8)
    // Resumed from the gap-free prefix instead, seqs 5..7 would be refused as conflicting duplicates.
    let seq = recovered.nextSeq('d1')
    for (let i = 0; i < 4; i++) {
      const receipt = recovered.ingest([reading('d1', seq++, 10 + i, 1)])
      expect(receipt.anomalies).toEqual([])
      expect(receipt.accepted).toBe(1)
    }
    expect(count(recovered)).toBe(6 + 4)
    expect(recovered.nextSeq('d1')).toBe(12)
    // The gap stays: the proof frontier ends at seq 3's time.
    expect(recovered.stats().proofFrontier).toBe(3)
  })

  it('a damaged archive record loses history, not events: archive() returns the other records, and stats() count it once', async () => {
    const archiveConfig: EngineOptions = { windows: tumbling(10), retention: 20, now: () => 1_000 }
    const factory = new IDBFactory()
    const make = () => indexedDbPersistence({ name: 'damaged-archive', indexedDB: factory, archive: finalArchive() })
    const readings = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => reading('d1', from + i + 1, from + i, 1))
    const first = await openEngine({ ...archiveConfig, persistence: make() })
    first.ingest(readings(0, 50))
    await first.close() // archive record 1: windows 0 to 30
    const second = await openEngine({ ...archiveConfig, persistence: make() })
    second.ingest(readings(50, 100))
    await second.close() // archive record 2: windows 40 to 80
    const db = await raw(factory, 'damaged-archive')
    const [oldest] = (await db.getAllKeys('archive')) as IDBValidKey[]
    const bytes = new Uint8Array((await db.get('archive', oldest as IDBValidKey)) as ArrayBuffer)
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 0xff
    await db.put('archive', bytes.buffer, oldest)
    db.close()
    const persistence = make()
    const reopened = await openEngine({ ...archiveConfig, persistence })
    expect(recoveryReport(reopened)).toMatchObject({ corrupt: [], lostEvents: 0, lossUnknown: false })
    expect((await persistence.archive()).map((r) => r.start)).toEqual([40, 50, 60, 70, 80])
    expect(persistence.stats().corruptRecords).toBe(1)
    await persistence.archive({ from: 0, to: 20 })
    expect(persistence.stats().corruptRecords).toBe(1)
    expect(reopened.results()).toEqual(second.results())
    // It stays stored (rotation has not reached it): the next handle finds it again when it reads it.
    await reopened.close()
    const next = make()
    await openEngine({ ...archiveConfig, persistence: next })
    expect(next.stats().corruptRecords).toBe(0)
    // A query reads only the records whose window starts meet [from, to): not the damaged one.
    expect((await next.archive({ from: 50 })).map((r) => r.start)).toEqual([50, 60, 70, 80])
    expect(next.stats().corruptRecords).toBe(0)
    expect((await next.archive()).map((r) => r.start)).toEqual([40, 50, 60, 70, 80])
    expect(next.stats().corruptRecords).toBe(1)
  })

  it('an archive record stored under a key that is not an archive key is reported once: the checkpoint taken at open removes it', async () => {
    const archiveConfig: EngineOptions = { windows: tumbling(10), retention: 20, now: () => 1_000 }
    const factory = new IDBFactory()
    const make = () => indexedDbPersistence({ name: 'foreign-archive-key', indexedDB: factory, archive: finalArchive() })
    const first = await openEngine({ ...archiveConfig, persistence: make() })
    first.ingest(Array.from({ length: 50 }, (_, i) => reading('d1', i + 1, i, 1)))
    await first.close()
    // Something else wrote into the archive store (another program, a bug): a key of another shape.
    const db = await raw(factory, 'foreign-archive-key')
    await db.put('archive', new Uint8Array([1, 2, 3]).buffer, 'stray')
    db.close()
    const persistence = make()
    const reopened = await openEngine({ ...archiveConfig, persistence })
    expect(recoveryReport(reopened)).toMatchObject({
      corrupt: [{ store: 'archive', key: 'stray', reason: 'key is not [seq, count, minStart, maxStart]' }],
      lostEvents: 0,
      lossUnknown: false,
    })
    await reopened.close()
    const again = make()
    const clean = await openEngine({ ...archiveConfig, persistence: again })
    expect(recoveryReport(clean)?.corrupt).toEqual([])
    expect(clean.stats().persistenceError).toBeNull()
    expect((await again.archive()).map((r) => r.start)).toEqual([0, 10, 20, 30])
  })

  it('after a damaged checkpoint, restores an older checkpoint still stored and replays the log records stored after it', async () => {
    const factory = new IDBFactory()
    const name = 'older-checkpoint'
    const first = await open(factory, name)
    await first.ingest(batch(1, 2)).durable
    await first.close() // checkpoint at lsn 1
    const db = await raw(factory, name)
    const older = (await db.get('checkpoints', 1)) as ArrayBuffer
    db.close()
    const second = await open(factory, name)
    await second.ingest(batch(3, 3)).durable
    await second.close() // checkpoint at lsn 2: it deleted the one at lsn 1, and the log up to 2
    // An older checkpoint is still stored (as when the deletion of one did not happen), and the newest one is damaged.
    const restore = await raw(factory, name)
    await restore.put('checkpoints', older, 1)
    restore.close()
    const third = await open(factory, name)
    await third.ingest(batch(6, 1)).durable // lsn 3, after both checkpoints
    await damage(factory, name, 'checkpoints', 2, (bytes) => bytes.length - 1)
    const recovered = await open(factory, name)
    expect(recoveryReport(recovered)).toMatchObject({
      checkpointLsn: 1,
      corrupt: [{ store: 'checkpoints', key: '2', reason: 'payload checksum mismatch' }],
      lossUnknown: true,
      replayedRecords: 1,
      replayedEvents: 1,
    })
    // The older checkpoint's 2 events and the record after the damaged one; the 3 events of lsn 2 went with the truncated log.
    expect(count(recovered)).toBe(2 + 1)
    expect(recovered.nextSeq('d1')).toBe(7)
  })
})

describe('when checkpoints are taken', () => {
  it.each([
    ['{ ms }', { ms: 1e12 }],
    // As JavaScript (or TypeScript without exactOptionalPropertyTypes) passes an unset setting.
    ['{ events: undefined, ms }', { events: undefined, ms: 1e12 } as unknown as OpenEngineOptions['checkpointEvery']],
  ])('checkpointEvery given in part (%s) keeps the persistence’s other trigger', async (_, checkpointEvery) => {
    const persistence = memoryPersistence({ checkpointEvery: { events: 3 } })
    const checkpoints = checkpointWrites(persistence)
    const engine = await openEngine({ ...config, persistence, ...(checkpointEvery === undefined ? {} : { checkpointEvery }) })
    await engine.ingest(batch(1, 2)).durable
    expect(checkpoints).toHaveLength(0)
    await engine.ingest(batch(3, 1)).durable
    expect(checkpoints).toHaveLength(1)
    await checkpoints[0]
    expect(persistence.stats()).toMatchObject({ checkpoints: 1, walRecords: 0 })
  })

  it('close() writes no checkpoint when the log holds nothing after the last one', async () => {
    const persistence = memoryPersistence()
    const first = await openEngine({ ...config, persistence })
    await first.ingest(batch(1, 3)).durable
    await first.close()
    const checkpoints = checkpointWrites(persistence)
    const second = await openEngine({ ...config, persistence })
    expect(recoveryReport(second)).toMatchObject({ replayedRecords: 0 })
    second.ingest(batch(1, 3)) // duplicates only: still one record
    await second.close()
    expect(checkpoints).toHaveLength(1)
    const third = await openEngine({ ...config, persistence })
    await third.close()
    expect(checkpoints).toHaveLength(1)
    expect(visibleState(third)).toEqual(visibleState(second))
  })
})

describe('indexedDbPersistence options', () => {
  /** Counts the readwrite transactions opened from now on, and the options each was given. */
  function watchTransactions(): { options: (IDBTransactionOptions | undefined)[] } {
    const seen: { options: (IDBTransactionOptions | undefined)[] } = { options: [] }
    const transaction = FakeDatabase.prototype.transaction
    vi.spyOn(FakeDatabase.prototype, 'transaction').mockImplementation(function (this: IDBDatabase, ...args) {
      if (args[1] === 'readwrite') seen.options.push(args[2])
      return transaction.apply(this, args)
    })
    return seen
  }

  it.each([
    [true, 1],
    [false, 3],
  ])('coalesce: %s puts three appends made together into %i transaction(s), each resolving after its commit', async (coalesce, transactions) => {
    const factory = new IDBFactory()
    const persistence = indexedDbPersistence({ name: 'coalesce', indexedDB: factory, coalesce })
    await persistence.open()
    const seen = watchTransactions()
    const lsns = await Promise.all([1, 2, 3].map((i) => persistence.append(ingestOp([reading('d1', i, i, 1)]))))
    expect(lsns).toEqual([1, 2, 3])
    expect(seen.options).toHaveLength(transactions)
    const db = await raw(factory, 'coalesce')
    expect(await db.getAllKeys('wal')).toEqual([1, 2, 3])
    db.close()
  })

  it('coalesces the appends of one synchronous run of code: an append after an await starts another transaction', async () => {
    const engine = await open(new IDBFactory(), 'coalesce-await')
    const seen = watchTransactions()
    const together = [engine.ingest(batch(1, 1)), engine.ingest(batch(2, 1))]
    await Promise.resolve()
    const after = engine.ingest(batch(3, 1))
    await Promise.all([...together, after].map((receipt) => receipt.durable))
    expect(seen.options).toHaveLength(2)
    expect(engine.stats().walRecords).toBe(3)
  })

  it.each(['default', 'strict', 'relaxed'] as const)('durability: %s is the durability of every write transaction', async (durability) => {
    const persistence = indexedDbPersistence({ name: 'durability', indexedDB: new IDBFactory(), durability })
    const engine = await openEngine({ ...config, persistence, checkpointEvery: { events: 2 } })
    const seen = watchTransactions()
    await engine.ingest(batch(1, 2)).durable
    await engine.close()
    // The append, the checkpoint it called for, and none other.
    expect(seen.options).toEqual([{ durability }, { durability }])
  })

  it('leaves durability at the browser’s default when not given', async () => {
    const persistence = indexedDbPersistence({ name: 'durability-default', indexedDB: new IDBFactory() })
    await persistence.open()
    const seen = watchTransactions()
    await persistence.append(ingestOp(batch(1, 1)))
    expect(seen.options).toEqual([{ durability: 'default' }])
  })
})

describe('the final-window archive’s records', () => {
  it('hold at most 4,096 results each', async () => {
    const persistence = memoryPersistence({ archive: finalArchive() })
    const engine = await openEngine({ windows: tumbling(10), retention: 20, now: () => 1_000, persistence })
    // One reading per window: windows 0 to 40,990 turn final once the reading at 41,000 moves the watermark.
    engine.ingest(Array.from({ length: 4_101 }, (_, i) => reading('d1', i + 1, 10 * i, 1)))
    await engine.close()
    expect(persistence.stats()).toMatchObject({ archivedChanges: 4_100, archiveRecords: 2 })
    await persistence.open()
    expect((await persistence.archive()).map((r) => r.start)).toEqual(Array.from({ length: 4_100 }, (_, i) => 10 * i))
  })
})

describe('the configuration a log is written under', () => {
  it.each([
    ['another allowed lateness', { allowedLateness: 20 }],
    ['aggregates it was not written with', { aggregates: { p: quantiles({ at: [0.5] }) } }],
  ] as [string, Partial<OpenEngineOptions>][])('refuses %s, and leaves the log as it is', async (_, other) => {
    const factory = new IDBFactory()
    const engine = await open(factory, 'configuration')
    await engine.ingest(batch(1, 2)).durable
    await engine.close()
    const error = await open(factory, 'configuration', other).catch((e: unknown) => e)
    expect(isLogConfigurationError(error)).toBe(true)
    expect(count(await open(factory, 'configuration'))).toBe(2)
  })
})

describe('a log kept before its configuration was stored beside it', () => {
  /** A log of `tumbling(10)` whose stored configuration is deleted, as a version that did not store it left it. */
  async function oldLog(name: string, checkpointOnClose: boolean): Promise<IDBFactory> {
    const factory = new IDBFactory()
    const engine = await open(factory, name, { checkpointOnClose })
    await engine.ingest(batch(1, 2)).durable
    await engine.close()
    const db = await raw(factory, name)
    expect(await db.get('meta', 'configuration')).toBe(engine.replica.configuration)
    await db.delete('meta', 'configuration')
    db.close()
    return factory
  }

  it('is judged by its checkpoint: another configuration is refused', async () => {
    const factory = await oldLog('old-with-checkpoint', true)
    const error = await open(factory, 'old-with-checkpoint', { windows: tumbling(20) }).catch((e: unknown) => e)
    expect(isLogConfigurationError(error)).toBe(true)
    expect(count(await open(factory, 'old-with-checkpoint'))).toBe(2)
  })

  it('with records alone, is replayed under the configuration it is opened with', async () => {
    const factory = await oldLog('old-records-only', false)
    const engine = await open(factory, 'old-records-only', { windows: tumbling(20) })
    expect(recoveryReport(engine)).toMatchObject({ replayedRecords: 1, replayedEvents: 2, corrupt: [] })
    expect(engine.results().map((r) => [r.window, r.count])).toEqual([['tumbling:20', 2]])
  })
})

describe('a full disk: backpressure', () => {
  it('engine.writable errors with the failed write, and a fresh one takes batches again once the retried checkpoint committed', async () => {
    const timers = new ManualTimers()
    const factory = new IDBFactory()
    const persistence = indexedDbPersistence({ name: 'writable-full', indexedDB: factory })
    const checkpoints = checkpointWrites(persistence)
    const engine = await openEngine({ ...config, persistence, timers })
    const free = fillDisk()
    // The batch whose write failed: the producer hears of it, and holds what it has not sent.
    await expect(engine.writable.getWriter().write(batch(1, 2))).rejects.toSatisfy(isQuotaError)
    // Later batches are refused whole while the log has a hole.
    await expect(engine.writable.getWriter().write(batch(3, 2))).rejects.toSatisfy(isQuotaError)
    free()
    timers.advance(1_000)
    await checkpoints[0]
    const writer = engine.writable.getWriter()
    await writer.write(batch(3, 2))
    await writer.close()
    const reopened = await open(factory, 'writable-full')
    expect(count(reopened)).toBe(4)
  })
})

describe('the final-window archive, fed by peers', () => {
  it('stages a later change to a final window, from a peer, so archive() returns the window as it is now', async () => {
    const options: EngineOptions = { windows: tumbling(10), watermark: manual(), now: () => 1_000 }
    const persistence = memoryPersistence({ archive: finalArchive() })
    const device = await openEngine({ ...options, persistence })
    device.ingest([reading('d1', 1, 1, 4)])
    device.advanceWatermark(100)
    expect((await persistence.archive()).map((r) => [r.start, r.count, r.sum])).toEqual([[0, 1, 4]])
    // A peer that held a reading of the same window merges it in after the window turned final here.
    const peer = createEngine({ ...options, replicaId: 'peer' })
    peer.ingest([reading('p1', 1, 2, 5)])
    const { cells, clocks } = peer.replica.exportState()
    device.replica.mergeRemote(cells, clocks)
    const [window] = device.results()
    expect(window).toMatchObject({ start: 0, count: 2, sum: 9, final: true })
    expect(await persistence.archive()).toEqual([window])
    await device.close()
    await persistence.open()
    expect(await persistence.archive()).toEqual([window])
  })
})

describe('local choices between two opens', () => {
  it('a log reopened with another trigger and accumulation opens, and its windows follow the new ones', async () => {
    const factory = new IDBFactory()
    const timers = new ManualTimers(1_000)
    const base = { windows: tumbling(60_000), watermark: manual(), now: timers.read }
    const first = await openEngine({ ...base, trigger: { early: afterProcessingTime(5_000) }, persistence: indexedDbPersistence({ name: 'choices', indexedDB: factory }) })
    first.ingest([reading('d1', 1, 1_000, 4)])
    expect(first.nextTickAt()).toBe(6_000)
    await first.close()
    const second = await openEngine({ ...base, accumulation: 'discarding', persistence: indexedDbPersistence({ name: 'choices', indexedDB: factory }) })
    expect(recoveryReport(second)).toMatchObject({ corrupt: [] })
    // The timer of the early trigger is gone; the window's value shows at its on-time pane, whole.
    expect(second.nextTickAt()).toBe(Number.POSITIVE_INFINITY)
    const panes: [string, number][] = []
    second.subscribe((changes) => {
      for (const change of changes) panes.push([change.type, change.result.sum])
    })
    second.advanceWatermark(60_000)
    expect(panes).toEqual([['on_time', 4]])
  })
})

describe('write retries on the global timers', () => {
  it('arm a retry that does not keep a Node process alive, and close() disarms it', async () => {
    const armed: { ms: number; timer: ReturnType<typeof setTimeout> }[] = []
    const setTimer = globalThis.setTimeout
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((run: () => void, ms?: number) => {
      const timer = setTimer(run, ms)
      armed.push({ ms: ms ?? 0, timer })
      return timer
    }) as typeof setTimeout)
    const clear = vi.spyOn(globalThis, 'clearTimeout')
    const engine = await open(new IDBFactory(), 'global-timers', { checkpointOnClose: false })
    fillDisk()
    await expect(engine.ingest(batch(1, 2)).durable).rejects.toSatisfy(isQuotaError)
    const retry = armed.find((entry) => entry.ms === 1_000)
    expect(retry?.timer.hasRef()).toBe(false)
    await engine.close()
    expect(clear).toHaveBeenCalledWith(retry?.timer)
  })
})

describe('peers’ state refused before a merge is logged', () => {
  it('peers’ cells whose aggregate states do not decode are left out of the logged merge and counted once, also after a crash', async () => {
    const options = { windows: tumbling(60_000), watermark: manual(), now: () => 1_000, aggregates: { p: quantiles({ at: [0.5] }) } }
    const factory = new IDBFactory()
    const reopen = () => openEngine({ ...options, persistence: indexedDbPersistence({ name: 'undecodable-states', indexedDB: factory }) })
    const live = await reopen()
    const peer = createEngine({ ...options, replicaId: 'peer' })
    peer.ingest([reading('p1', 1, 1_000, 5), reading('p1', 2, 70_000, 6)])
    const [good, bad] = peer.replica.exportState().cells as [CellEntry, CellEntry]
    live.replica.mergeRemote([good, { ...bad, aggregates: [new Uint8Array([0xff, 0xff, 0xff])] }], [])
    await whenDurable(live)
    expect(live.stats().anomalies.invalid_remote_cell).toBe(1)
    expect(count(live)).toBe(1)
    // The tab crashes: the next open replays the merge (the good cell) and the refused count, once.
    const recovered = await reopen()
    expect(recoveryReport(recovered)).toMatchObject({ corrupt: [], replayedRecords: 3 })
    expect(recovered.stats().anomalies).toEqual(live.stats().anomalies)
    expect(recovered.results()).toEqual(live.results())
  })
})

describe('replay at the recorded processing time', () => {
  it('refuses again, as future_ts, an event that was too far ahead of its batch, though the clock at reopen has passed it', async () => {
    const factory = new IDBFactory()
    const clock = { now: 1_000 }
    const options = { ...config, maxFutureSkew: 100, now: () => clock.now, checkpointOnClose: false }
    const live = await open(factory, 'future', options)
    // 4 s ahead of the batch's processing time: refused, and logged with the batch.
    const receipt = live.ingest([reading('d1', 1, 5_000, 1), reading('d1', 2, 1_000, 2)])
    expect(receipt.anomalies.map((a) => a.reason)).toEqual(['future_ts'])
    await whenDurable(live)
    // The tab crashes; it reopens a minute later, when ts 5,000 is no longer ahead of the clock.
    clock.now = 61_000
    const recovered = await open(factory, 'future', options)
    expect(recoveryReport(recovered)).toMatchObject({ replayedRecords: 2, corrupt: [] })
    expect(visibleState(recovered)).toEqual(visibleState(live))
    expect(recovered.stats().anomalies.future_ts).toBe(1)
    expect(count(recovered)).toBe(1)
  })
})
