import 'fake-indexeddb/auto'
import { IDBDatabase as FakeDatabase, IDBFactory } from 'fake-indexeddb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import * as Y from 'yjs'
import { bindDoc } from '@tidemark/yjs'
import {
  type CellEntry,
  type ClockEntry,
  createEngine,
  defineAggregate,
  type Engine,
  type EngineOptions,
  manual,
  groupCellEntries,
  type StreamEvent,
  afterProcessingTime,
  type TidemarkEngine,
  tickWhenDue,
  tumbling,
} from '@tidemark/engine'
import {
  indexedDbPersistence,
  isFencedError,
  isLogConfigurationError,
  isQuotaError,
  type LogConfigurationError,
  openEngine,
  type OpenEngineOptions,
  QuotaError,
  recoveryReport,
} from '../src/index.ts'
import { memoryPersistence } from '../src/memory.ts'
import { ManualTimers, reading, visibleState, whenDurable } from '@tidemark/engine/testing'
import { abortWithQuota, checkpointWrites, damage, failNextWrite, fillDisk, raw } from './fakeStorage.ts'

const _FILE = 'packages/idb/test/openEngine.test.ts'

afterEach(() => {
  vi.restoreAllMocks()
})

const clock = { now: 1_000 }
const config: EngineOptions = { windows: tumbling(10), allowedLateness: 10, now: () => clock.now }

function batch(from: number, count: number, source = 'd1'): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => reading(source, from + i, 3 * (from + i), from + i))
}

function open(factory: IDBFactory, name: string, extra: Partial<OpenEngineOptions> = {}): Promise<Engine> {
  return openEngine({ ...config, persistence: indexedDbPersistence({ name, indexedDB: factory }), ...extra })
}

function count(engine: Engine): number {
  return engine.results().reduce((sum, r) => sum + r.count, 0)
}

describe('openEngine: durability', () => {
  it('resolves durable only after the record committed, and publishes before that', async () => {
    const engine = await open(new IDBFactory(), 'durable')
    const order: string[] = []
    const transaction = FakeDatabase.prototype.transaction
    vi.spyOn(FakeDatabase.prototype, 'transaction').mockImplementation(function (this: IDBDatabase, ...args) {
      const tx = transaction.apply(this, args)
      tx.addEventListener('complete', () => order.push(`committed ${[...tx.objectStoreNames].join(',')}`))
      return tx
    })
    engine.subscribe(() => order.push('published'))
    const receipt = engine.ingest(batch(1, 3))
    order.push('returned')
    await receipt.durable
    order.push('durable')
    expect(order).toEqual(['published', 'returned', 'committed checkpoints,wal', 'durable'])
  })

  it('puts batches ingested in one task into one transaction, one record each', async () => {
    const factory = new IDBFactory()
    const engine = await open(factory, 'coalesced')
    let transactions = 0
    const transaction = FakeDatabase.prototype.transaction
    vi.spyOn(FakeDatabase.prototype, 'transaction').mockImplementation(function (this: IDBDatabase, ...args) {
      if (args[1] === 'readwrite') transactions++
      return transaction.apply(this, args)
    })
    const receipts = Array.from({ length: 10 }, (_, i) => engine.ingest(batch(1 + 5 * i, 5)))
    await Promise.all(receipts.map((r) => r.durable))
    expect(transactions).toBe(1)
    expect(engine.stats()).toMatchObject({ walRecords: 10 })
    const reopened = await open(factory, 'coalesced')
    expect(count(reopened)).toBe(count(engine))
  })

  it('recovers exactly after a crash: a second engine on the same database, the first never closed', async () => {
    const factory = new IDBFactory()
    const live = await open(factory, 'crash')
    live.ingest(batch(1, 4))
    clock.now += 50
    live.ingest([...batch(5, 3), reading('d2', 1, 30, 7), { id: 'bad', source: 'd1', ts: Number.NaN, value: 1 }])
    live.tick()
    live.ingest(batch(8, 2))
    live.ingest([reading('d1', 10, 1, 99)]) // beyond lateness by now
    live.ingest([reading('d1', 2, 999, 1)]) // a copy of seq 2 with another ts
    await whenDurable(live)
    const crashed = await open(factory, 'crash')
    expect(visibleState(crashed)).toEqual(visibleState(live))
    expect(visibleState(crashed).late.length).toBeGreaterThan(0)
    expect(crashed.stats().anomalies).toMatchObject({ invalid_ts: 1, conflicting_duplicate: 1 })
    // Dedup memory came back too: the recovered batch counts as duplicates.
    const again = crashed.ingest(batch(1, 4))
    expect(again).toMatchObject({ accepted: 0, duplicates: 4 })
  })

  it('a reopened engine fires the early pane a crash left armed, at its deadline, ticked only then', async () => {
    const factory = new IDBFactory()
    const timers = new ManualTimers(0)
    const options = { windows: tumbling(60_000), trigger: { early: afterProcessingTime(5_000) }, now: timers.read, timers }
    const live = await openEngine({ ...options, persistence: indexedDbPersistence({ name: 'armed', indexedDB: factory }) })
    const crash = tickWhenDue(live, { now: timers.read, timers })
    timers.advance(1_000)
    live.ingest([reading('d1', 1, 1_000, 4)]) // arms the window's timer: due at 6,000
    timers.advance(1_000)
    await whenDurable(live)
    // The tab crashes at 2,000 (its timers stop; the engine is never closed) and reopens at 3,000.
    crash()
    timers.now = 3_000
    const reopened = await openEngine({ ...options, persistence: indexedDbPersistence({ name: 'armed', indexedDB: factory }) })
    expect(reopened.nextTickAt()).toBe(6_000)
    let ticks = 0
    const tick = reopened.tick.bind(reopened)
    reopened.tick = () => {
      ticks++
      tick()
    }
    const panes: [number, number][] = []
    reopened.subscribe((changes) => {
      for (const change of changes) if (change.type === 'provisional') panes.push([timers.now, change.result.sum])
    })
    tickWhenDue(reopened, { now: timers.read, timers })
    timers.advance(60_000)
    expect(panes).toEqual([[6_000, 4]])
    expect(ticks).toBe(1)
    await reopened.close()
  })

  it('checkpoints every N events, truncates the log behind, and checkpoints on close', async () => {
    const factory = new IDBFactory()
    const engine = await open(factory, 'checkpoints', { checkpointEvery: { events: 10 } })
    for (let i = 0; i < 5; i++) await engine.ingest(batch(1 + 4 * i, 4)).durable
    await whenDurable(engine)
    const db = await raw(factory, 'checkpoints')
    const [checkpointKey] = await db.getAllKeys('checkpoints')
    expect(checkpointKey).toBeGreaterThan(0)
    expect(Math.min(...((await db.getAllKeys('wal')) as number[]))).toBeGreaterThan(checkpointKey as number)
    db.close()
    const crashed = await open(factory, 'checkpoints', { checkpointEvery: { events: 10 } })
    expect(recoveryReport(crashed)?.checkpointLsn).toBe(checkpointKey)
    expect(recoveryReport(crashed)?.replayedEvents).toBeLessThan(10)
    expect(visibleState(crashed)).toEqual(visibleState(engine))
    await crashed.close()
    const reopened = await open(factory, 'checkpoints')
    expect(recoveryReport(reopened)).toMatchObject({ replayedRecords: 0, corrupt: [] })
    expect(count(reopened)).toBe(20)
  })

  it('gives back nextSeq exactly after a reload: from the checkpoint and from the log after it', async () => {
    const factory = new IDBFactory()
    const live = await open(factory, 'next-seq', { checkpointEvery: { events: 10_000 }, watermark: manual() })
    // d1 has a gap (5, 6 above 1..3); d3's seqs above a gap are released from dedup memory behind the horizon.
    await live.ingest([...batch(1, 3), reading('d1', 5, 15, 1), reading('d1', 6, 18, 1)]).durable
    await live.ingest(Array.from({ length: 5000 }, (_, i) => reading('d3', i + 2, 20, 1))).durable
    live.advanceWatermark(999_000)
    live.ingest(Array.from({ length: 5000 }, (_, i) => reading('d4', i + 2, 1_000_000, 1)))
    await whenDurable(live) // 10,005 events logged: a checkpoint
    // After the last checkpoint: only the log knows these.
    live.ingest([reading('d2', 1, 30, 7), reading('d1', 9, 1_000_001, 2)])
    await whenDurable(live)
    expect(live.stats().dedupEntries).toBeLessThan(5000 + 3)
    const reloaded = await open(factory, 'next-seq', { watermark: manual() })
    expect(recoveryReport(reloaded)?.checkpointLsn).not.toBeNull()
    expect(recoveryReport(reloaded)?.replayedRecords).toBeGreaterThan(0)
    const sources = ['d1', 'd2', 'd3', 'd4', 'd5']
    expect(sources.map((s) => reloaded.nextSeq(s))).toEqual(sources.map((s) => live.nextSeq(s)))
    expect(sources.map((s) => reloaded.nextSeq(s))).toEqual([10, 2, 5002, 5002, 1])
  })

  it('checkpoints after T ms of processing time', async () => {
    const factory = new IDBFactory()
    const engine = await open(factory, 'timed', { checkpointEvery: { ms: 1_000 } })
    await engine.ingest(batch(1, 2)).durable
    clock.now += 1_000
    await engine.ingest(batch(3, 2)).durable
    await whenDurable(engine)
    expect(await (await raw(factory, 'timed')).getAllKeys('checkpoints')).toEqual([2])
  })
})

describe('openEngine: a log tail without ingested events', () => {
  const options = { windows: tumbling(60_000), trigger: { early: afterProcessingTime(5_000) }, watermark: manual() }

  /** Cells and clocks of another replica, for a merge. */
  function peerState(cells: number) {
    const peer = createEngine({ ...options, replicaId: 'peer' })
    peer.ingest(Array.from({ length: cells }, (_, i) => reading('p1', i + 1, i * 60_000, 1)))
    return peer.replica.exportState()
  }

  /** A log whose last checkpoint covers one batch (its early pane armed), and an engine writing after it. */
  async function afterCheckpoint(extra: Partial<OpenEngineOptions> = {}) {
    const factory = new IDBFactory()
    const timers = new ManualTimers(1_000)
    const reopen = () => openEngine({ ...options, now: timers.read, persistence: indexedDbPersistence({ name: 'tail', indexedDB: factory }), ...extra })
    const first = await reopen()
    await first.ingest([reading('d1', 1, 1_000, 4)]).durable
    await first.close()
    return { factory, timers, reopen, live: await reopen() }
  }

  async function checkpointKeys(factory: IDBFactory): Promise<number[]> {
    const db = await raw(factory, 'tail')
    const keys = (await db.getAllKeys('checkpoints')) as number[]
    db.close()
    return keys
  }

  it.each([
    ['a watermark advance', (engine: Engine) => engine.advanceWatermark(30_000)],
    [
      'a tick that fired a pane',
      (engine: Engine, timers: ManualTimers) => {
        timers.now += 10_000
        engine.tick()
      },
    ],
    [
      'a merge of peers’ cells',
      (engine: Engine) => {
        const { cells, clocks } = peerState(1)
        engine.replica.mergeRemote(cells, clocks)
      },
    ],
    ['an empty ingest', (engine: Engine) => engine.ingest([])],
  ])('after a crash whose tail holds only %s, close() checkpoints, so the next open replays nothing', async (_, write) => {
    const { timers, reopen, live } = await afterCheckpoint()
    write(live, timers)
    // The tab crashes: the engine is never closed. The next one replays that record, then closes.
    const reopened = await reopen()
    expect(recoveryReport(reopened)).toMatchObject({ replayedRecords: 1, replayedEvents: 0 })
    await reopened.close()
    const again = await reopen()
    expect(recoveryReport(again)).toMatchObject({ replayedRecords: 0, corrupt: [] })
    expect(visibleState(again)).toEqual(visibleState(live))
  })

  it('keeps the counts of peers’ state refused before a merge was logged, and of reported anomalies, across a crash', async () => {
    const { cells, clocks } = peerState(3)
    const [first, second, third] = cells as [CellEntry, CellEntry, CellEntry]
    const bad = (entry: CellEntry): CellEntry => ({ ...entry, cell: { ...entry.cell, count: -1 } })
    const unknownWindow = (entry: CellEntry): CellEntry => ({ ...entry, address: { ...entry.address, window: 'tumbling:7' } })
    const { reopen, live } = await afterCheckpoint()
    // Groups with invalid cells: the merge logs the valid ones.
    live.replica.mergeRemoteGroups(groupCellEntries([first, bad(second)]), clocks)
    // Loose cells: one refused before it is grouped, one by the merge (which replay judges again).
    live.replica.mergeRemote([bad(third), unknownWindow(first), third], [])
    // A transport's own findings.
    live.replica.reportAnomaly('invalid_remote_cell', 'peer update could not be applied')
    live.replica.reportAnomaly('source_conflict', 'source p9 is written by replicas x, y')
    await whenDurable(live)
    const anomalies = live.stats().anomalies
    expect(anomalies).toMatchObject({ invalid_remote_cell: 4, source_conflict: 1 })
    // The tab crashes: the next open replays the tail.
    const recovered = await reopen()
    expect(recoveryReport(recovered)).toMatchObject({ corrupt: [], replayedEvents: 0 })
    expect(recovered.stats().anomalies).toEqual(anomalies)
    expect(recovered.stats().ingested).toBe(live.stats().ingested)
    expect(recovered.results()).toEqual(live.results())
  })

  it('logs a merge without the peer clocks its checks refused: the log takes every record, ingest goes on, and recovery counts them once', async () => {
    const { cells, clocks } = peerState(1)
    const { reopen, live } = await afterCheckpoint()
    // A clock that is not one (a transport's bug, a hostile peer): refused before the merge is logged.
    live.replica.mergeRemote(cells, [...clocks, null as unknown as ClockEntry, { ...(clocks[0] as ClockEntry), source: 7 as unknown as string }])
    await live.ingest([reading('d1', 2, 2_000, 1)]).durable
    const receipt = live.ingest([reading('d1', 3, 3_000, 1)])
    expect(receipt).toMatchObject({ accepted: 1, anomalies: [] })
    await receipt.durable
    expect(live.stats()).toMatchObject({ persistenceError: null, anomalies: { invalid_remote_cell: 2, overflow: 0 } })
    // The tab crashes: the next open replays the merge and the batch.
    const recovered = await reopen()
    expect(recoveryReport(recovered)).toMatchObject({ corrupt: [], replayedEvents: 2 })
    expect(recovered.stats().anomalies).toEqual(live.stats().anomalies)
    expect(recovered.stats().ingested).toBe(live.stats().ingested)
    expect(recovered.results()).toEqual(live.results())
  })

  it('counts the cells and clocks the tail merged toward checkpointEvery', async () => {
    const { cells, clocks } = peerState(6)
    const merged = cells.length + clocks.length
    const { factory, reopen, live } = await afterCheckpoint({ checkpointEvery: { events: 10 } })
    live.replica.mergeRemote(cells, clocks) // under 10: no checkpoint
    const reopened = await reopen()
    const [before] = await checkpointKeys(factory)
    // With the tail's merge, these events make 10.
    await reopened.ingest(Array.from({ length: 10 - merged }, (_, i) => reading('d1', i + 2, 2_000, 1))).durable
    await whenDurable(reopened)
    expect(await checkpointKeys(factory)).toEqual([expect.toSatisfy((key: number) => key > (before as number))])
  })
})

describe('openEngine: corruption', () => {
  it('skips a damaged record, says what was lost, and keeps serving', async () => {
    const factory = new IDBFactory()
    const live = await open(factory, 'corrupt')
    for (const [from, n] of [
      [1, 2],
      [3, 3],
      [6, 4],
      [10, 5],
    ] as const) {
      await live.ingest(batch(from, n)).durable
    }
    await damage(factory, 'corrupt', 'wal', 2, (bytes) => bytes.length - 1)
    await damage(factory, 'corrupt', 'wal', 3, () => 20)
    const recovered = await open(factory, 'corrupt')
    const report = recoveryReport(recovered)
    expect(report?.corrupt).toEqual([
      { store: 'wal', key: '2', reason: 'payload checksum mismatch', kind: 'ingest', lostEvents: 3 },
      { store: 'wal', key: '3', reason: 'header checksum mismatch' },
    ])
    expect(report).toMatchObject({ lostEvents: 3, lossUnknown: true, replayedRecords: 2 })
    const stats = recovered.stats()
    expect(stats.persistenceError).toMatch(/2 corrupt record\(s\), at least 3 events lost; first: wal 2: payload checksum mismatch/)
    expect(stats.anomalies.corrupt_record).toBe(2)
    expect(count(recovered)).toBe(2 + 5)
    // It keeps serving: the lost seqs are a gap, and new batches are durable.
    const receipt = recovered.ingest(batch(15, 2))
    expect(receipt.accepted).toBe(2)
    await receipt.durable
    // The damaged records were dropped behind a checkpoint at open: the next open is clean.
    const again = await open(factory, 'corrupt')
    expect(recoveryReport(again)?.corrupt).toEqual([])
    // corrupt_record counts the records found at this open, not those of opens before it.
    expect(again.stats()).toMatchObject({ persistenceError: null, anomalies: { corrupt_record: 0 } })
    expect(count(again)).toBe(2 + 5 + 2)
  })

  it('reports a damaged checkpoint as a loss of unknown size and recovers the log after it', async () => {
    const factory = new IDBFactory()
    const live = await open(factory, 'bad-checkpoint', { checkpointEvery: { events: 4 } })
    await live.ingest(batch(1, 4)).durable
    await live.ingest(batch(5, 2)).durable
    await whenDurable(live)
    const [key] = await (await raw(factory, 'bad-checkpoint')).getAllKeys('checkpoints')
    await damage(factory, 'bad-checkpoint', 'checkpoints', key as number, (bytes) => bytes.length - 1)
    const recovered = await open(factory, 'bad-checkpoint')
    expect(recoveryReport(recovered)).toMatchObject({ checkpointLsn: null, lossUnknown: true })
    expect(recoveryReport(recovered)?.corrupt[0]).toMatchObject({ store: 'checkpoints', reason: 'payload checksum mismatch' })
    expect(recovered.stats().persistenceError).toMatch(/corrupt/)
  })
})

describe('openEngine: full quota', () => {
  it('rejects durable with QuotaError, refuses later batches with overflow, and resumes after a retried checkpoint', async () => {
    const timers = new ManualTimers()
    const factory = new IDBFactory()
    const persistence = indexedDbPersistence({ name: 'quota', indexedDB: factory })
    const checkpoints = checkpointWrites(persistence)
    const engine = await openEngine({ ...config, persistence, writeRetry: { firstMs: 1_000, maxMs: 8_000 }, timers })
    await engine.ingest(batch(1, 3)).durable
    expect(timers.pending).toEqual([])
    const free = fillDisk()
    const refusedByDisk = engine.ingest(batch(4, 2))
    // Applied in memory, but never acknowledged.
    expect(refusedByDisk.accepted).toBe(2)
    const failure = await refusedByDisk.durable.then(
      () => null,
      (error: unknown) => error,
    )
    expect(isQuotaError(failure)).toBe(true)
    expect((failure as Error).message).toMatch(/storage quota exceeded; record lsn \d+ was not written/)
    // Backpressure: whole batches are refused with overflow until storage works again.
    const refused = engine.ingest(batch(6, 2))
    expect(refused).toMatchObject({ accepted: 0, rejected: 2 })
    expect(refused.anomalies[0]).toMatchObject({ reason: 'overflow', detail: expect.stringMatching(/storage refused: .*quota exceeded/) })
    await expect(refused.durable).rejects.toBeInstanceOf(QuotaError)
    expect(engine.stats().persistenceError).toMatch(/quota exceeded/)
    // One retry is armed, firstMs after the failure, and nothing runs before it is due.
    expect(timers.pending).toEqual([1_000])
    timers.advance(999)
    expect(checkpoints).toHaveLength(0)
    // The first retry finds the disk still full, and arms the next one twice as far off.
    timers.advance(1)
    expect(checkpoints).toHaveLength(1)
    await expect(checkpoints[0]).rejects.toThrow(/checkpoint at lsn \d+ was not written/)
    expect(engine.stats().persistenceError).toMatch(/checkpoint at lsn \d+ was not written/)
    expect(engine.ingest(batch(6, 2)).rejected).toBe(2)
    expect(timers.pending).toEqual([2_000])
    free()
    timers.advance(1_999)
    expect(checkpoints).toHaveLength(1)
    timers.advance(1)
    expect(checkpoints).toHaveLength(2)
    await checkpoints[1]
    expect(timers.pending).toEqual([])
    const resumed = engine.ingest(batch(6, 2))
    expect(resumed.accepted).toBe(2)
    await resumed.durable
    expect(engine.stats().anomalies.overflow).toBe(4)
    // The retried checkpoint holds the refused-by-disk batch too; nothing acknowledged is missing.
    const reopened = await open(factory, 'quota')
    expect(count(reopened)).toBe(3 + 2 + 2)
    expect(visibleState(reopened)).toEqual(visibleState(engine))
  })

  it('a failed checkpoint leaves no hole: ingest goes on, and the checkpoint is retried with backoff', async () => {
    const timers = new ManualTimers()
    const factory = new IDBFactory()
    const persistence = indexedDbPersistence({ name: 'checkpoint-fails', indexedDB: factory })
    const checkpoints = checkpointWrites(persistence)
    const engine = await openEngine({ ...config, persistence, checkpointEvery: { events: 4 }, writeRetry: { firstMs: 1_000, maxMs: 8_000 }, timers })
    // The checkpoint's transaction aborts with a full quota; the log's own records still commit.
    failNextWrite('put', 'checkpoints', abortWithQuota)
    await engine.ingest(batch(1, 4)).durable
    expect(checkpoints).toHaveLength(1)
    await expect(checkpoints[0]).rejects.toBeInstanceOf(QuotaError)
    expect(engine.stats().persistenceError).toMatch(/quota exceeded; checkpoint at lsn 1 was not written/)
    // Every acknowledged record is in the log: nothing to refuse.
    const next = engine.ingest(batch(5, 2))
    expect(next).toMatchObject({ accepted: 2, anomalies: [] })
    await next.durable
    expect(engine.stats().anomalies.overflow).toBe(0)
    // The retry waits for its backoff rather than following every record; one that fails again doubles it.
    expect(checkpoints).toHaveLength(1)
    expect(timers.pending).toEqual([1_000])
    failNextWrite('put', 'checkpoints', abortWithQuota)
    timers.advance(1_000)
    expect(checkpoints).toHaveLength(2)
    await expect(checkpoints[1]).rejects.toBeInstanceOf(QuotaError)
    expect(timers.pending).toEqual([2_000])
    await engine.ingest(batch(7, 1)).durable
    timers.advance(2_000)
    expect(checkpoints).toHaveLength(3)
    await checkpoints[2]
    expect(timers.pending).toEqual([])
    // A crash now replays nothing: the retried checkpoint holds every batch.
    const crashed = await open(factory, 'checkpoint-fails')
    expect(recoveryReport(crashed)).toMatchObject({ checkpointLsn: 3, replayedRecords: 0, corrupt: [] })
    expect(count(crashed)).toBe(7)
    expect(visibleState(crashed)).toEqual(visibleState(engine))
    // The backoff starts over once a checkpoint committed.
    failNextWrite('put', 'checkpoints', abortWithQuota)
    await engine.ingest(batch(8, 4)).durable
    await expect(checkpoints[3]).rejects.toBeInstanceOf(QuotaError)
    expect(timers.pending).toEqual([1_000])
  })

  it('a checkpoint that cannot be encoded is retried with backoff, not on every record', async () => {
    const timers = new ManualTimers()
    let broken = false
    let encodes = 0
    // An aggregate whose encoder fails for a while (a user's bug, a state it cannot write yet).
    const fragileSum = defineAggregate<number, number>({
      name: 'fragileSum',
      init: () => 0,
      add: (sum, x) => sum + x,
      merge: (a, b) => a + b,
      result: (sum) => sum,
      encode: (sum) => {
        encodes++
        if (broken) throw new RangeError('the encoder is down')
        const bytes = new Uint8Array(8)
        new DataView(bytes.buffer).setFloat64(0, sum, true)
        return bytes
      },
      decode: (bytes) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getFloat64(0, true),
    })
    const factory = new IDBFactory()
    const reopen = () =>
      openEngine({
        ...config,
        aggregates: { sum: fragileSum },
        persistence: indexedDbPersistence({ name: 'checkpoint-unencodable', indexedDB: factory }),
        checkpointEvery: { events: 2 },
        writeRetry: { firstMs: 1_000, maxMs: 8_000 },
        timers,
      })
    const engine = await reopen()
    broken = true
    encodes = 0
    await engine.ingest(batch(1, 2)).durable
    expect(engine.stats().persistenceError).toMatch(/checkpoint could not be encoded: .*the encoder is down/)
    const tried = encodes
    expect(tried).toBeGreaterThan(0)
    // Ingest goes on (the log holds every record), and the retry waits for its backoff.
    for (let i = 0; i < 4; i++) {
      const receipt = engine.ingest(batch(3 + i, 1))
      expect(receipt).toMatchObject({ accepted: 1, anomalies: [] })
      await receipt.durable
    }
    expect(encodes).toBe(tried)
    expect(timers.pending).toEqual([1_000])
    broken = false
    timers.advance(1_000)
    await whenDurable(engine)
    expect(timers.pending).toEqual([])
    // A crash now replays nothing but that last (empty) batch: the retried checkpoint holds every other.
    const crashed = await reopen()
    expect(recoveryReport(crashed)).toMatchObject({ replayedRecords: 1, replayedEvents: 0, corrupt: [] })
    expect(visibleState(crashed)).toEqual(visibleState(engine))
  })

  it('close() cancels the retry armed after a failed write', async () => {
    const timers = new ManualTimers()
    const engine = await open(new IDBFactory(), 'quota-close', { timers, checkpointOnClose: false })
    fillDisk()
    await expect(engine.ingest(batch(1, 2)).durable).rejects.toBeInstanceOf(QuotaError)
    expect(timers.pending).toEqual([1_000])
    await engine.close()
    expect(timers.pending).toEqual([])
  })

  it('acknowledges nothing that was not written: a crash while the disk is full recovers what was durable', async () => {
    const factory = new IDBFactory()
    const engine = await open(factory, 'quota-crash')
    await engine.ingest(batch(1, 3)).durable
    fillDisk()
    await expect(engine.ingest(batch(4, 2)).durable).rejects.toBeInstanceOf(QuotaError)
    vi.restoreAllMocks()
    const crashed = await open(factory, 'quota-crash')
    expect(count(crashed)).toBe(3)
    // The refused batch was never acknowledged, so the producer still has it and sends it again.
    expect(crashed.ingest(batch(4, 2)).accepted).toBe(2)
  })

  it('stops writing at once when the tab loses its source claim', async () => {
    const claim = { held: true }
    const engine = await openEngine({ ...config, persistence: indexedDbPersistence({ name: 'claim', indexedDB: new IDBFactory(), claim }) })
    await engine.ingest(batch(1, 1)).durable
    claim.held = false
    await expect(engine.ingest(batch(2, 1)).durable).rejects.toThrow(/no longer holds its source claim/)
    expect(engine.ingest(batch(3, 1)).anomalies[0]).toMatchObject({ reason: 'overflow' })
  })
  it('rejects openEngine itself with QuotaError when the quota is full as a log is first created; it opens once there is room', async () => {
    const factory = new IDBFactory()
    const free = fillDisk(['wal', 'checkpoints', 'meta', 'lateLane', 'archive'])
    const persistence = () => indexedDbPersistence({ name: 'quota-first-open', indexedDB: factory })
    const failure = await openEngine({ ...config, persistence: persistence() }).then(
      () => null,
      (error: unknown) => error,
    )
    expect(isQuotaError(failure)).toBe(true)
    free()
    const engine = await openEngine({ ...config, persistence: persistence() })
    await engine.ingest(batch(1, 3)).durable
    expect(engine.stats()).toMatchObject({ ingested: 3, persistenceError: null })
    await engine.close()
  })
})

describe('openEngine: two engines on one database (no claim, or a claim made without locks)', () => {
  it('stops for good once the other engine took its next lsn, and never retries a checkpoint over that engine’s records', async () => {
    const factory = new IDBFactory()
    const timers = new ManualTimers()
    const persistence = indexedDbPersistence({ name: 'two-engines', indexedDB: factory })
    const checkpoints = checkpointWrites(persistence)
    const a = await openEngine({ ...config, persistence, timers })
    await a.ingest(batch(1, 2)).durable
    const b = await open(factory, 'two-engines')
    await b.ingest(batch(1, 3, 'd2')).durable
    const failure = await a.ingest(batch(3, 2)).durable.then(
      () => null,
      (error: unknown) => error as Error,
    )
    expect(isFencedError(failure)).toBe(true)
    expect(failure?.message).toMatch(/another handle writes to this database \(lsn 2 is already in the log\), so this handle writes no more/)
    expect(a.stats().persistenceError).toMatch(/another handle writes to this database/)
    // No retry is armed: its checkpoint would truncate b's record. Later batches are refused, saying why.
    expect(timers.pending).toEqual([])
    const refused = a.ingest(batch(5, 1))
    expect(refused.anomalies[0]).toMatchObject({ reason: 'overflow', detail: expect.stringMatching(/storage refused: .*another handle writes to this database/) })
    await expect(refused.durable).rejects.toSatisfy(isFencedError)
    timers.advance(60_000)
    await a.close()
    expect(checkpoints).toEqual([])
    await b.close()
    // Everything b acknowledged is there, and a's batch is not, as its rejected durable said.
    const reopened = await open(factory, 'two-engines')
    expect([reopened.nextSeq('d1'), reopened.nextSeq('d2')]).toEqual([3, 4])
    expect(count(reopened)).toBe(2 + 3)
  })

  it('rejects durable for a batch that would land behind the other engine’s checkpoint, where recovery never reads', async () => {
    const factory = new IDBFactory()
    const a = await open(factory, 'behind')
    const b = await open(factory, 'behind')
    await b.ingest(batch(1, 3, 'd2')).durable
    await b.close() // its checkpoint covers lsn 1, a's next lsn
    await expect(a.ingest(batch(1, 2)).durable).rejects.toSatisfy(isFencedError)
    const reopened = await open(factory, 'behind')
    expect([reopened.nextSeq('d1'), reopened.nextSeq('d2')]).toEqual([1, 4])
  })
})

describe('openEngine: identity and upgrades', () => {
  it('keeps the replica id across reloads and refuses a different one', async () => {
    const factory = new IDBFactory()
    const first = await open(factory, 'identity')
    const replicaId = recoveryReport(first)?.replicaId
    expect(replicaId).toMatch(/.{8,}/)
    // A crash right after open, before any batch: the id was stored before the engine was handed out.
    const second = await open(factory, 'identity')
    expect(recoveryReport(second)?.replicaId).toBe(replicaId)
    await second.ingest(batch(1, 2)).durable
    await second.close()
    const third = await open(factory, 'identity', { replicaId: replicaId as string })
    expect(recoveryReport(third)?.replicaId).toBe(replicaId)
    expect((third as TidemarkEngine).replicaId).toBe(replicaId)
    await third.close()
    await expect(open(factory, 'identity', { replicaId: 'someone-else' })).rejects.toThrow(/belongs to replica/)
  })

  it('uses a replica id given for a new log', async () => {
    const engine = await open(new IDBFactory(), 'given', { replicaId: 'tab-7' })
    expect(recoveryReport(engine)?.replicaId).toBe('tab-7')
  })

  it.each([
    ['a checkpoint', true],
    ['records alone, no checkpoint yet', false],
  ])('refuses a log of other windows (%s) with a LogConfigurationError naming both, and closes the log', async (_what, checkpointOnClose) => {
    const factory = new IDBFactory()
    const engine = await open(factory, 'config', { checkpointOnClose })
    await engine.ingest(batch(1, 2)).durable
    await engine.close()
    const error = await open(factory, 'config', { windows: tumbling(20) }).catch((e: unknown) => e)
    expect(isLogConfigurationError(error)).toBe(true)
    expect([(error as LogConfigurationError).logged, (error as LogConfigurationError).expected]).toEqual([engine.replica.configuration, '{"windows":["tumbling:20"],"allowedLateness":10}'])
    // The failed open released the database and left it as it was: the right configuration opens it.
    expect(count(await open(factory, 'config'))).toBe(2)
  })
})

describe('openEngine: replication and Node', () => {
  it('logs peers’ state merged through Yjs, so a reload without peers still shows it', async () => {
    const factory = new IDBFactory()
    const docA = new Y.Doc()
    const docB = new Y.Doc()
    docA.on('update', (update: Uint8Array, origin: unknown) => origin !== 'wire' && Y.applyUpdate(docB, update, 'wire'))
    docB.on('update', (update: Uint8Array, origin: unknown) => origin !== 'wire' && Y.applyUpdate(docA, update, 'wire'))
    const a = await open(factory, 'replica-a', { watermark: manual() })
    bindDoc(a, docA)
    const replicationErrors: string[] = []
    const b = createEngine({ ...config, watermark: manual(), replicaId: 'peer-b' })
    bindDoc(b, docB, { onError: (error) => replicationErrors.push(error.message) })
    await a.ingest(batch(1, 2, 'da')).durable
    b.ingest(batch(1, 3, 'db'))
    a.advanceWatermark(100)
    expect(count(a)).toBe(5)
    await whenDurable(a)
    await b.close()
    const reloaded = await open(factory, 'replica-a', { watermark: manual() })
    bindDoc(reloaded, new Y.Doc())
    // The new doc holds only this replica's own state until peers sync: its size differs, nothing else.
    const withoutDoc = (engine: Engine) => {
      const { stats, ...rest } = visibleState(engine)
      return { ...rest, stats: { ...stats, docBytes: 0 } }
    }
    expect(withoutDoc(reloaded)).toEqual(withoutDoc(a))
    expect(count(reloaded)).toBe(5)
    expect(replicationErrors).toEqual([])
  })

  it('runs on memoryPersistence: close and reopen keep everything', async () => {
    const persistence = memoryPersistence({ checkpointEvery: { events: 3 } })
    const engine = await openEngine({ ...config, persistence })
    engine.ingest(batch(1, 2))
    engine.ingest(batch(3, 2))
    await engine.ingest(batch(5, 2)).durable
    await engine.close()
    await expect(engine.close()).resolves.toBeUndefined()
    const reopened = await openEngine({ ...config, persistence })
    expect(visibleState(reopened)).toEqual(visibleState(engine))
  })
})

