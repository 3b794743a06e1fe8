import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type Engine, tumbling } from '@tidemark/engine'
import { reading } from '@tidemark/engine/testing'
import { claimSource, deleteSource, indexedDbPersistence, listSources, openEngine, type SourceClaim, type SourceLocks } from '../src/index.ts'
import { fillDisk } from './fakeStorage.ts'
import { FakeLocks, OriginStorage, origin, TabStorage } from './fakeOrigin.ts'

afterEach(() => {
  vi.restoreAllMocks()
  vi.unstubAllGlobals()
})

/** The claim's log, as the recipes open it: the persistence is given the claim. */
function openLog(claim: SourceClaim, indexedDB: IDBFactory): Promise<Engine> {
  return openEngine({ windows: tumbling(10), persistence: indexedDbPersistence({ name: claim.database, claim, indexedDB }) })
}

/** A tab session that writes three readings under its claim, finishes its source and closes. */
async function retireTab(claim: SourceClaim, indexedDB: IDBFactory): Promise<void> {
  const engine = await openLog(claim, indexedDB)
  await engine.ingest([1, 2, 3].map((seq) => reading(claim.source, seq, seq, 1))).durable
  await engine.finishSource(claim.source)
  await engine.close()
  await claim.release() // the tab is closed
}

describe('claimSource: a finished source is never handed out again', () => {
  it('a new tab session does not take it over: it gets a new source, and the finished one stays listed', async () => {
    const { tab, indexedDB, registry, cleanup } = origin()
    const retired = await tab()
    await retireTab(retired, indexedDB)
    const next = await tab()
    expect(next.source).not.toBe(retired.source)
    expect(next.reuse).toBe('new')
    const engine = await openLog(next, indexedDB)
    expect(engine.ingest([reading(next.source, 1, 1, 1)]).accepted).toBe(1)
    await engine.close()
    expect(JSON.parse(registry.getItem(`tidemark:registry:${retired.source}`) ?? 'null')).toMatchObject({ finished: true })
    const listed = await listSources(cleanup)
    expect(listed.find((l) => l.source === retired.source)).toMatchObject({ database: retired.database, held: false, registered: true, finished: true })
    expect(listed.find((l) => l.source === next.source)).toMatchObject({ held: true, finished: false })
  })

  it('a reload of the tab that finished it claims another source: a free registered one, else a new one', async () => {
    const { tab, indexedDB } = origin()
    const storage = new TabStorage()
    const mine = await tab(storage)
    await retireTab(mine, indexedDB)
    const reloaded = await tab(storage)
    expect([reloaded.source === mine.source, reloaded.reuse]).toEqual([false, 'new'])
    expect(storage.getItem('tidemark:source:dash')).toBe(reloaded.source)
    // Another tab session's source, free once that tab closed, is taken over rather than the finished one.
    await reloaded.release()
    const again = await tab(storage)
    expect([again.source, again.reuse]).toEqual([reloaded.source, 'reload'])
    await again.release()
    const other = await tab(new TabStorage())
    expect([other.source, other.reuse]).toEqual([again.source, 'takeover'])
  })

  it('is retired once the finish is durable, before finishSource resolves and so before the tab can let its lock go', async () => {
    const { tab, indexedDB, registry } = origin()
    const claim = await tab()
    const engine = await openLog(claim, indexedDB)
    const entry = () => JSON.parse(registry.getItem(`tidemark:registry:${claim.source}`) ?? 'null') as { finished?: boolean }
    const finishing = engine.finishSource(claim.source)
    expect(entry().finished).toBeUndefined() // not durable yet
    await finishing
    expect(entry().finished).toBe(true)
    await engine.close()
  })

  it('a tab session that listed it before the finish, and reaches its lock after the finishing tab let go, passes it by', async () => {
    const { tab, locks, registry, indexedDB } = origin()
    const retired = await tab()
    await retired.release()
    const holder = await tab() // the takeover: the same source
    expect(holder.source).toBe(retired.source)
    // A second tab session lists the registry now, while the source is held and not finished; its
    // lock requests wait until the holder finished the source and closed.
    let closed = (): void => {}
    const holderClosed = new Promise<void>((resolve) => {
      closed = resolve
    })
    const late: SourceLocks = { request: (name, options, callback) => holderClosed.then(() => locks.request(name, options, callback)) }
    const racing = claimSource({ prefix: 'dash', locks: late, storage: new TabStorage(), registry })
    await retireTab(holder, indexedDB)
    closed()
    const claim = await racing
    expect(claim.source).not.toBe(holder.source)
    expect(claim.reuse).toBe('new')
    expect(locks.isHeld(holder.source)).toBe(false) // taken, found finished, let go
  })

  it('the same for a source deleted between the listing and its lock', async () => {
    const { tab, locks, registry, cleanup } = origin()
    const free = await tab()
    await free.release()
    let deleted = (): void => {}
    const gone = new Promise<void>((resolve) => {
      deleted = resolve
    })
    const late: SourceLocks = { request: (name, options, callback) => gone.then(() => locks.request(name, options, callback)) }
    const racing = claimSource({ prefix: 'dash', locks: late, storage: new TabStorage(), registry })
    await deleteSource(free.source, cleanup)
    deleted()
    expect((await racing).reuse).toBe('new')
  })

  it('is retired when a log holding its finish is opened: a tab that crashed between the commit and the retirement', async () => {
    const { tab, indexedDB, cleanup } = origin()
    const first = await tab()
    // The crash: the finish committed, the registry never heard of it, no checkpoint on close.
    const persistence = indexedDbPersistence({ name: first.database, indexedDB })
    const crashed = await openEngine({ windows: tumbling(10), persistence, checkpointOnClose: false })
    await crashed.finishSource(first.source)
    await crashed.close()
    await first.release()
    const storage = new TabStorage()
    const takeover = await tab(storage)
    expect(takeover.source).toBe(first.source) // nothing told the registry yet
    const engine = await openLog(takeover, indexedDB)
    await engine.close()
    expect((await listSources(cleanup)).map(({ source, finished }) => ({ source, finished }))).toEqual([{ source: first.source, finished: true }])
    await takeover.release()
    for (const claim of [await tab(storage), await tab()]) expect(claim.source).not.toBe(first.source)
  })

  it('is retired when it opens a log whose checkpoint holds the finish: a retirement the registry refused, then a checkpoint truncated the record', async () => {
    const { tab, indexedDB, registry } = origin()
    const storage = new TabStorage()
    const first = await tab(storage)
    const engine = await openLog(first, indexedDB)
    const setItem = registry.setItem.bind(registry)
    registry.setItem = () => {
      throw new DOMException('the quota has been exceeded', 'QuotaExceededError')
    }
    await engine.finishSource(first.source) // durable, but the registry kept no retirement
    expect(first.memoryError).toMatch(/could not be retired/)
    registry.setItem = setItem
    await engine.close() // its checkpoint holds the finish; the log no longer does
    await first.release()
    const takeover = await tab(new TabStorage())
    expect(takeover.source).toBe(first.source) // nothing told the registry yet
    const reopened = await openLog(takeover, indexedDB)
    await reopened.close()
    await takeover.release()
    expect(JSON.parse(registry.getItem(`tidemark:registry:${first.source}`) ?? 'null')).toMatchObject({ finished: true })
    for (const claim of [await tab(storage), await tab()]) expect(claim.source).not.toBe(first.source)
  })

  it('only for a durable finish of the claim’s own source', async () => {
    const { tab, indexedDB, registry } = origin()
    const claim = await tab()
    // The tab crashes after the failed finish: no checkpoint makes it durable.
    const persistence = indexedDbPersistence({ name: claim.database, claim, indexedDB })
    const engine = await openEngine({ windows: tumbling(10), persistence, checkpointOnClose: false })
    await engine.finishSource('dash-elsewhere') // an unknown source: finished, nothing of the claim's
    const restore = fillDisk(['wal'])
    await expect(engine.finishSource(claim.source)).rejects.toThrow(/quota/)
    restore()
    vi.restoreAllMocks()
    expect(JSON.parse(registry.getItem(`tidemark:registry:${claim.source}`) ?? 'null').finished).toBeUndefined()
    await engine.close()
    await claim.release()
    const next = await tab()
    expect(next.source).toBe(claim.source)
    const reopened = await openLog(next, indexedDB)
    expect(reopened.ingest([reading(next.source, 1, 1, 1)]).accepted).toBe(1) // the finish was lost, as its rejection said
    await reopened.close()
  })

  it('a finish whose record the disk refused is made durable by the next checkpoint, which retires the claim: no later tab session is handed the finished source', async () => {
    const { tab, indexedDB, registry } = origin()
    const claim = await tab()
    const engine = await openLog(claim, indexedDB)
    await engine.ingest([reading(claim.source, 1, 1, 1)]).durable
    const restore = fillDisk(['wal'])
    // Refused by the disk, but applied (as a batch whose write failed is): the checkpoint on close holds it.
    await expect(engine.finishSource(claim.source)).rejects.toThrow(/quota/)
    restore()
    vi.restoreAllMocks()
    await engine.close()
    expect(JSON.parse(registry.getItem(`tidemark:registry:${claim.source}`) ?? 'null')).toMatchObject({ finished: true })
    await claim.release()
    const next = await tab()
    const reopened = await openLog(next, indexedDB)
    expect({ same: next.source === claim.source, refused: reopened.ingest([reading(next.source, reopened.nextSeq(next.source), 3, 1)]).anomalies.map((a) => a.reason) }).toEqual({ same: false, refused: [] })
    await reopened.close()
  })

  it('deleteSource removes the finished source’s database and entry; nothing hands it out afterwards', async () => {
    const { tab, indexedDB, registry, cleanup } = origin()
    const storage = new TabStorage()
    const retired = await tab(storage)
    await retireTab(retired, indexedDB)
    await deleteSource(retired.source, cleanup) // the server has everything of it
    expect((await indexedDB.databases()).map((d) => d.name)).toEqual([])
    expect(registry.items.size).toBe(0)
    expect(await listSources(cleanup)).toEqual([])
    const next = await tab(storage)
    expect([next.source === retired.source, next.reuse]).toEqual([false, 'new'])
  })
})

describe('claimSource: a finished source without Web Locks or without a registry', () => {
  it("withoutLocks: 'single-tab': neither the reload nor the next tab session gets it", async () => {
    vi.stubGlobal('navigator', {})
    const registry = new OriginStorage()
    const indexedDB = new IDBFactory()
    const storage = new TabStorage()
    const single = (tabStorage: TabStorage) => claimSource({ prefix: 'dash', storage: tabStorage, registry, withoutLocks: 'single-tab' })
    const retired = await single(storage)
    await retireTab(retired, indexedDB)
    const reloaded = await single(storage)
    expect([reloaded.source === retired.source, reloaded.reuse]).toEqual([false, 'new'])
    await reloaded.release()
    const next = await single(new TabStorage())
    expect([next.source, next.reuse]).toEqual([reloaded.source, 'takeover'])
    const cleanup = { prefix: 'dash', registry, indexedDB, withoutLocks: 'single-tab' } as const
    expect((await listSources(cleanup)).find((l) => l.source === retired.source)).toMatchObject({ finished: true, held: false })
    await deleteSource(retired.source, cleanup)
    expect((await indexedDB.databases()).map((d) => d.name)).toEqual([])
  })

  it('registry: null: the tab forgets it, so its reload makes a new source', async () => {
    const locks = new FakeLocks()
    const indexedDB = new IDBFactory()
    const storage = new TabStorage()
    const claim = () => claimSource({ prefix: 'dash', locks, storage, registry: null })
    const retired = await claim()
    await retireTab(retired, indexedDB)
    const reloaded = await claim()
    expect([reloaded.source === retired.source, reloaded.reuse]).toEqual([false, 'new'])
  })

  it('retire() by hand, where the engine logs elsewhere: the same as the persistence does', async () => {
    const { tab } = origin()
    const storage = new TabStorage()
    const retired = await tab(storage)
    retired.retire() // after finishSource resolved on an engine that does not know the claim
    await retired.release()
    for (const claim of [await tab(storage), await tab()]) expect(claim.source).not.toBe(retired.source)
  })

  it('says why the registry could not keep the retirement', async () => {
    const { locks } = origin()
    const registry = new OriginStorage()
    const claim = await claimSource({ prefix: 'dash', locks, storage: new TabStorage(), registry })
    registry.setItem = () => {
      throw new DOMException('the quota has been exceeded', 'QuotaExceededError')
    }
    claim.retire()
    expect(claim.memoryError).toBe('the source could not be retired: the quota has been exceeded')
  })

  it('reports a retire that throws (a claim not from claimSource) as uncaught, and the finish is durable all the same', async () => {
    const reported: unknown[] = []
    vi.stubGlobal('reportError', (error: unknown) => reported.push(error))
    const broken = new Error('retire failed')
    const claim = { source: 'own-1', held: true, retire: () => { throw broken } }
    const indexedDB = new IDBFactory()
    const engine = await openEngine({ windows: tumbling(10), persistence: indexedDbPersistence({ name: 'own', claim, indexedDB }) })
    await engine.finishSource('own-1')
    expect(reported).toEqual([broken])
    await engine.close()
  })
})
