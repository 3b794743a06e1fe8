import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { tumbling } from '@tidemark/engine'
import { reading } from '@tidemark/engine/testing'
import { claimSource, deleteSource, indexedDbPersistence, listSources, openEngine, type SourceClaim, type SourceLocks, type SourceMemory } from '../src/index.ts'
import { FakeLocks, OriginStorage, origin, TabStorage } from './fakeOrigin.ts'
import { ingestOp } from './walOps.ts'

afterEach(() => {
  vi.restoreAllMocks()
  vi.unstubAllGlobals()
})

/** Lets every queued promise callback and task run; no timers involved. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('claimSource', () => {
  it('gives two tabs different sources, each holding its lock', async () => {
    const locks = new FakeLocks()
    const a = await claimSource({ prefix: 'dash', locks, storage: new TabStorage() })
    const b = await claimSource({ prefix: 'dash', locks, storage: new TabStorage() })
    expect(a.source).not.toBe(b.source)
    expect(a.source).toMatch(/^dash-[0-9a-z]+$/)
    expect([a.held, b.held, locks.isHeld(a.source), locks.isHeld(b.source)]).toEqual([true, true, true, true])
  })

  it('says why the id could not be remembered, and still claims one', async () => {
    const full: SourceMemory = {
      getItem: () => null,
      setItem: () => {
        throw new DOMException('the quota has been exceeded', 'QuotaExceededError')
      },
    }
    const claim = await claimSource({ prefix: 'dash', locks: new FakeLocks(), storage: full })
    expect(claim.held).toBe(true)
    expect(claim.memoryError).toBe('the source id could not be remembered: the quota has been exceeded')
    const unreadable: SourceMemory = {
      getItem: () => {
        throw new DOMException('access denied', 'SecurityError')
      },
      setItem: () => {},
    }
    expect((await claimSource({ prefix: 'dash', locks: new FakeLocks(), storage: unreadable })).memoryError).toBe(
      'the remembered source id could not be read: access denied',
    )
    expect((await claimSource({ prefix: 'dash', locks: new FakeLocks(), storage: new TabStorage() })).memoryError).toBeNull()
  })

  it('reuses the id after a reload', async () => {
    const locks = new FakeLocks()
    const storage = new TabStorage()
    const before = await claimSource({ prefix: 'dash', locks, storage })
    await before.release() // the page unloads, its locks go
    expect(locks.isHeld(before.source)).toBe(false)
    const after = await claimSource({ prefix: 'dash', locks, storage })
    expect([after.source, after.reuse]).toEqual([before.source, 'reload'])
  })

  it('picks another id when a duplicated tab inherits one that is still held', async () => {
    const locks = new FakeLocks()
    const original = new TabStorage()
    const first = await claimSource({ prefix: 'dash', locks, storage: original })
    const duplicate = original.copy()
    const second = await claimSource({ prefix: 'dash', locks, storage: duplicate })
    expect(second.source).not.toBe(first.source)
    expect(duplicate.getItem('tidemark:source:dash')).toBe(second.source)
    expect(original.getItem('tidemark:source:dash')).toBe(first.source)
  })

  it('ignores a remembered id from another prefix', async () => {
    const storage = new TabStorage(new Map([['tidemark:source:dash', 'other-123']]))
    const claim = await claimSource({ prefix: 'dash', locks: new FakeLocks(), storage })
    expect(claim.source).toMatch(/^dash-/)
  })

  it('signals a lost lock and stops counting as held', async () => {
    const locks = new FakeLocks()
    const claim = await claimSource({ prefix: 'dash', locks, storage: null })
    let lost = false
    void claim.lost.then(() => {
      lost = true
    })
    locks.steal(claim.source)
    await claim.lost
    expect([lost, claim.held]).toEqual([true, false])
  })

  it('does not signal a loss on release()', async () => {
    const locks = new FakeLocks()
    const claim = await claimSource({ prefix: 'dash', locks, storage: null })
    let lost = false
    void claim.lost.then(() => {
      lost = true
    })
    await claim.release()
    await settle()
    expect([lost, claim.held, locks.isHeld(claim.source)]).toEqual([false, false, false])
  })

  it('gives up with a clear error when every id tried is held', async () => {
    const busy: SourceLocks = { request: async (_name, _options, callback) => callback(null) }
    await expect(claimSource({ prefix: 'dash', locks: busy, storage: null, maxAttempts: 3 })).rejects.toThrow(
      /every one of 3 source ids tried was held/,
    )
  })

  it('takes a prefix of 1 to 1,004 characters, so that every id it makes is a valid source name', async () => {
    const longest = 'p'.repeat(1_004)
    const claim = await claimSource({ prefix: longest, locks: new FakeLocks(), storage: null, registry: null })
    expect(claim.source.startsWith(`${longest}-`)).toBe(true)
    const engine = await openEngine({ windows: tumbling(10), persistence: indexedDbPersistence({ name: claim.database, indexedDB: new IDBFactory() }) })
    expect(engine.ingest([reading(claim.source, 1, 1, 1)])).toMatchObject({ accepted: 1, anomalies: [] })
    for (const prefix of ['', 'p'.repeat(1_005)]) {
      await expect(claimSource({ prefix, locks: new FakeLocks(), storage: null, registry: null })).rejects.toThrow(
        'claimSource: prefix must be a non-empty string of at most 1004 characters',
      )
    }
  })

  it('says so when there is no Web Locks API', async () => {
    vi.stubGlobal('navigator', undefined)
    await expect(claimSource({ prefix: 'dash', storage: null })).rejects.toThrow(/no Web Locks API/)
  })

  it('uses navigator.locks and sessionStorage by default', async () => {
    const locks = new FakeLocks()
    const storage = new TabStorage()
    vi.stubGlobal('navigator', { locks })
    vi.stubGlobal('sessionStorage', storage)
    const claim = await claimSource({ prefix: 'dash' })
    expect(locks.isHeld(claim.source)).toBe(true)
    expect(storage.getItem('tidemark:source:dash')).toBe(claim.source)
  })
})

describe('claimSource: reuse across tab sessions', () => {
  it('a new tab session takes over a source no tab holds instead of making one more', async () => {
    const { tab, registry } = origin()
    const sources = new Set<string>()
    for (let session = 0; session < 3; session++) {
      const claim = await tab()
      sources.add(claim.source)
      expect(claim.reuse).toBe(session === 0 ? 'new' : 'takeover')
      await claim.release() // the tab is closed
    }
    expect(sources.size).toBe(1)
    expect([...registry.items.keys()]).toEqual([`tidemark:registry:${[...sources][0]}`])
  })

  it('a duplicated tab finds its inherited id held and takes over a registered source no tab holds, not a fresh id', async () => {
    const { tab } = origin()
    const original = new TabStorage()
    const first = await tab(original)
    const ended = await tab()
    await ended.release() // that tab session ended; its source stays registered
    const duplicate = await tab(original.copy())
    expect([duplicate.reuse, duplicate.source]).toEqual(['takeover', ended.source])
    expect(duplicate.source).not.toBe(first.source)
  })

  it('makes a new source only when every registered one is held, and reuses the most recent free one', async () => {
    const { tab, locks } = origin()
    const open = [await tab(), await tab(), await tab()]
    expect(new Set(open.map((c) => c.source)).size).toBe(3)
    expect(open.map((c) => c.reuse)).toEqual(['new', 'new', 'new'])
    await (open[0] as SourceClaim).release()
    await (open[2] as SourceClaim).release()
    // Both free; the one claimed last is taken first.
    const next = await tab()
    expect([next.source, next.reuse]).toEqual([(open[2] as SourceClaim).source, 'takeover'])
    expect((await tab()).source).toBe((open[0] as SourceClaim).source)
    const fourth = await tab()
    expect(fourth.reuse).toBe('new')
    expect(locks.isHeld(fourth.source)).toBe(true)
  })

  it('still prefers this tab’s own id after a reload', async () => {
    const { tab } = origin()
    const storage = new TabStorage()
    const other = await tab()
    const mine = await tab(storage)
    await other.release()
    await mine.release()
    const reloaded = await tab(storage)
    expect([reloaded.source, reloaded.reuse]).toEqual([mine.source, 'reload'])
  })

  it('reopens the taken-over source’s database: its log and its seq resume', async () => {
    const { tab, indexedDB } = origin()
    const first = await tab()
    const engine = await openEngine({ windows: tumbling(10), persistence: indexedDbPersistence({ name: first.database, claim: first, indexedDB }) })
    await engine.ingest([1, 2, 3].map((seq) => reading(first.source, seq, seq, 1))).durable
    await engine.close()
    await first.release()
    const second = await tab()
    expect([second.source, second.database]).toEqual([first.source, `tidemark-${first.source}`])
    const resumed = await openEngine({ windows: tumbling(10), persistence: indexedDbPersistence({ name: second.database, claim: second, indexedDB }) })
    expect(resumed.nextSeq(second.source)).toBe(4)
    expect(resumed.results()[0]?.count).toBe(3)
    await resumed.close()
  })

  it('says why the registry could not be kept, and still claims', async () => {
    const registry = new OriginStorage()
    registry.setItem = () => {
      throw new DOMException('the quota has been exceeded', 'QuotaExceededError')
    }
    const claim = await claimSource({ prefix: 'dash', locks: new FakeLocks(), storage: new TabStorage(), registry })
    expect(claim.held).toBe(true)
    expect(claim.memoryError).toBe('the source could not be registered: the quota has been exceeded')
  })

  it('keeps one registry key per source, holding when it was last claimed, and `"finished": true` once retired', async () => {
    const { tab, registry } = origin()
    vi.spyOn(Date, 'now').mockReturnValue(1_700_000_000_000)
    const claim = await tab()
    expect(Object.fromEntries(registry.items)).toEqual({ [`tidemark:registry:${claim.source}`]: '{"lastClaimed":1700000000000}' })
    claim.retire()
    expect(JSON.parse(registry.items.get(`tidemark:registry:${claim.source}`) as string)).toEqual({ lastClaimed: 1_700_000_000_000, finished: true })
  })

  it('claims where localStorage cannot be used (a sandboxed frame): every tab session makes a new source, and memoryError says why', async () => {
    const locks = new FakeLocks()
    Object.defineProperty(globalThis, 'localStorage', {
      configurable: true,
      get() {
        throw new DOMException('The document is sandboxed and lacks the "allow-same-origin" flag.', 'SecurityError')
      },
    })
    try {
      const first = await claimSource({ prefix: 'dash', locks, storage: new TabStorage() })
      await first.release() // that tab session ends; no registry remembers its source
      const second = await claimSource({ prefix: 'dash', locks, storage: new TabStorage() })
      expect([first.reuse, second.reuse, first.held, second.held]).toEqual(['new', 'new', false, true])
      expect(second.source).not.toBe(first.source)
      expect(second.memoryError).toBe('localStorage is not accessible: The document is sandboxed and lacks the "allow-same-origin" flag.')
    } finally {
      Reflect.deleteProperty(globalThis, 'localStorage')
    }
  })

  it('refuses unknown options, naming the closest', async () => {
    await expect(claimSource({ prefix: 'dash', withoutLock: 'single-tab' } as never)).rejects.toThrow(
      "claimSource: unknown option 'withoutLock' (did you mean 'withoutLocks'?)",
    )
    await expect(claimSource({ prefix: 'dash', withoutLocks: 'many-tabs' } as never)).rejects.toThrow(/withoutLocks must be 'single-tab'/)
    await expect(claimSource({ prefix: 'dash', maxAttempts: 0 })).rejects.toThrow(/maxAttempts must be an integer >= 1/)
  })
})

describe('listSources and deleteSource', () => {
  it('lists the registered sources, most recent first, with which a tab holds', async () => {
    const { tab, cleanup } = origin()
    const a = await tab()
    const b = await tab()
    await a.release()
    const listed = await listSources(cleanup)
    expect(listed.map(({ source, held, registered, database }) => ({ source, held, registered, database }))).toEqual([
      { source: b.source, held: true, registered: true, database: b.database },
      { source: a.source, held: false, registered: true, database: a.database },
    ])
    // Without locks.query(), each lock is tried and let go at once.
    const { query: _query, ...probing } = { request: cleanup.locks.request.bind(cleanup.locks), query: undefined }
    const probed = await listSources({ ...cleanup, locks: probing })
    expect(probed.map((l) => l.held)).toEqual([true, false])
    expect(cleanup.locks.isHeld(a.source)).toBe(false)
  })

  it('deletes a free source’s database and registry entry, and never a held one', async () => {
    const { tab, cleanup, indexedDB, registry } = origin()
    const kept = await tab()
    const done = await tab()
    for (const claim of [kept, done]) {
      const engine = await openEngine({ windows: tumbling(10), persistence: indexedDbPersistence({ name: claim.database, claim, indexedDB }) })
      await engine.ingest([reading(claim.source, 1, 1, 1)]).durable
      await engine.close()
    }
    await done.release()
    await expect(deleteSource(kept.source, cleanup)).rejects.toThrow(`deleteSource: ${kept.source} is held by a tab`)
    await deleteSource(done.source, cleanup)
    const names = (await indexedDB.databases()).map((d) => d.name)
    expect(names).toEqual([kept.database])
    expect([...registry.items.keys()]).toEqual([`tidemark:registry:${kept.source}`])
    expect((await listSources(cleanup)).map((l) => l.source)).toEqual([kept.source])
    // The next tab session finds nothing free to take over: a new source, a fresh database.
    expect((await tab()).reuse).toBe('new')
  })

  it('gives the tab session that remembers a deleted source a new one: the deleted id never starts again at seq 1', async () => {
    const { tab, cleanup, indexedDB } = origin()
    const storage = new TabStorage()
    const first = await tab(storage)
    const engine = await openEngine({ windows: tumbling(10), persistence: indexedDbPersistence({ name: first.database, claim: first, indexedDB }) })
    await engine.ingest([1, 2, 3].map((seq) => reading(first.source, seq, seq, 1))).durable
    await engine.close()
    await first.release()
    await deleteSource(first.source, cleanup) // the server has everything of it
    // The same tab session claims again: a reload, or the closed tab reopened with its sessionStorage.
    const again = await tab(storage)
    expect(again.source).not.toBe(first.source)
    expect(again.reuse).toBe('new')
    expect(storage.getItem('tidemark:source:dash')).toBe(again.source)
  })

  it('without a registry, trusts the remembered id, even before its source has a database (a page naming its source)', async () => {
    const locks = new FakeLocks()
    const named = 'dash-named1'
    const claim = await claimSource({ prefix: 'dash', locks, storage: { getItem: () => named, setItem: () => {} }, registry: null })
    expect([claim.source, claim.reuse]).toEqual([named, 'reload'])
  })

  it('finds databases the registry does not know, and refuses sources of another prefix', async () => {
    const { cleanup, indexedDB } = origin()
    const orphan = await openEngine({ windows: tumbling(10), persistence: indexedDbPersistence({ name: 'tidemark-dash-old1', indexedDB }) })
    await orphan.close()
    const other = await openEngine({ windows: tumbling(10), persistence: indexedDbPersistence({ name: 'tidemark-fleet-x1', indexedDB }) })
    await other.close()
    expect(await listSources(cleanup)).toEqual([{ source: 'dash-old1', database: 'tidemark-dash-old1', held: false, registered: false, lastClaimed: 0, finished: false }])
    await expect(deleteSource('fleet-x1', cleanup)).rejects.toThrow(/is not a source claimed with prefix 'dash'/)
    await deleteSource('dash-old1', cleanup)
    expect((await indexedDB.databases()).map((d) => d.name)).toEqual(['tidemark-fleet-x1'])
  })

  it('refuses to delete a database still open in this page', async () => {
    const { tab, cleanup, indexedDB } = origin()
    const claim = await tab()
    const engine = await openEngine({ windows: tumbling(10), persistence: indexedDbPersistence({ name: claim.database, indexedDB }) })
    await claim.release()
    await expect(deleteSource(claim.source, cleanup)).rejects.toThrow(`the database ${claim.database} is open in this page`)
    await engine.close()
    await deleteSource(claim.source, cleanup)
    expect(await indexedDB.databases()).toEqual([])
  })

  it('says so when a connection elsewhere keeps the database open: the deletion completes once it closes, the registry entry stays until deleteSource is called again', async () => {
    const { tab, cleanup, indexedDB, registry } = origin()
    const claim = await tab()
    const engine = await openEngine({ windows: tumbling(10), persistence: indexedDbPersistence({ name: claim.database, claim, indexedDB }) })
    await engine.ingest([reading(claim.source, 1, 1, 1)]).durable
    await engine.close()
    await claim.release()
    // Another tab's connection, which does not close when asked to.
    const elsewhere = await new Promise<IDBDatabase>((resolve, reject) => {
      const request = indexedDB.open(claim.database)
      request.onsuccess = () => resolve(request.result)
      request.onerror = () => reject(request.error)
    })
    await expect(deleteSource(claim.source, cleanup)).rejects.toThrow(`the database ${claim.database} is still open`)
    expect([...registry.items.keys()]).toEqual([`tidemark:registry:${claim.source}`])
    elsewhere.close()
    await settle()
    expect(await indexedDB.databases()).toEqual([])
    expect((await listSources(cleanup)).map((l) => l.source)).toEqual([claim.source])
    await deleteSource(claim.source, cleanup)
    expect([...registry.items.keys()]).toEqual([])
    expect(await listSources(cleanup)).toEqual([])
  })

  it('holds the source’s lock while deleting its database, so no tab takes it over half-deleted', async () => {
    const { tab, cleanup, indexedDB, locks } = origin()
    const claim = await tab()
    const engine = await openEngine({ windows: tumbling(10), persistence: indexedDbPersistence({ name: claim.database, claim, indexedDB }) })
    await engine.close()
    await claim.release()
    const heldWhileDeleting: boolean[] = []
    const deleteDatabase = indexedDB.deleteDatabase.bind(indexedDB)
    vi.spyOn(indexedDB, 'deleteDatabase').mockImplementation((name) => {
      heldWhileDeleting.push(locks.isHeld(claim.source))
      return deleteDatabase(name)
    })
    const deleting = deleteSource(claim.source, cleanup)
    const meanwhile = await tab() // a new tab session while the deletion runs
    await deleting
    expect(heldWhileDeleting).toEqual([true])
    expect([meanwhile.reuse, meanwhile.source === claim.source]).toEqual(['new', false])
    expect(locks.isHeld(claim.source)).toBe(false)
  })

  it('deletes a database another page’s Tidemark persistence has open: that persistence lets it go, and its later writes say why', async () => {
    const { tab, indexedDB } = origin()
    const claim = await tab()
    const persistence = indexedDbPersistence({ name: claim.database, claim, indexedDB })
    await persistence.open()
    // What deleteSource in another page does once that page holds the lock: delete the database.
    const outcome = await new Promise<string>((resolve) => {
      const request = indexedDB.deleteDatabase(claim.database)
      request.onsuccess = () => resolve('deleted')
      request.onerror = () => resolve('failed')
      request.onblocked = () => resolve('blocked')
    })
    expect(outcome).toBe('deleted')
    expect(await indexedDB.databases()).toEqual([])
    await expect(persistence.append(ingestOp([reading(claim.source, 1, 1, 1)]))).rejects.toThrow(
      `indexedDbPersistence("${claim.database}"): another connection deleted the database; open() again`,
    )
  })

  it('listSources rejects when the registry cannot be read; deleteSource rejects without IndexedDB, deleting nothing', async () => {
    const { tab, cleanup, registry } = origin()
    const claim = await tab()
    await claim.release()
    const unreadable: typeof registry = Object.assign(Object.create(registry), {
      key: () => {
        throw new DOMException('The operation is insecure.', 'SecurityError')
      },
    })
    await expect(listSources({ ...cleanup, registry: unreadable })).rejects.toThrow(/listSources: the source registry could not be read: .*insecure/)
    vi.stubGlobal('indexedDB', undefined)
    const { indexedDB: _given, ...withoutIndexedDb } = cleanup
    await expect(deleteSource(claim.source, withoutIndexedDb)).rejects.toThrow('deleteSource: no IndexedDB here; pass options.indexedDB')
    expect([...registry.items.keys()]).toEqual([`tidemark:registry:${claim.source}`])
  })
})

describe('claimSource without Web Locks', () => {
  it('names the cause and the fix on a plain-http LAN origin', async () => {
    vi.stubGlobal('navigator', {})
    vi.stubGlobal('isSecureContext', false)
    vi.stubGlobal('location', { origin: 'http://192.168.1.20:5173' })
    const error = await claimSource({ prefix: 'dash', storage: null, registry: null }).then(
      () => null,
      (e: unknown) => e as Error,
    )
    expect(error?.message).toBe(
      'claimSource: this page has no Web Locks (navigator.locks) because it is not a secure context: http://192.168.1.20:5173 is plain http on an address other than localhost. ' +
        "Serve the page over https, or open it from http://localhost or http://127.0.0.1; or accept the risk of one tab at a time with withoutLocks: 'single-tab' (two tabs of this page would then write one source)",
    )
    await expect(listSources({ prefix: 'dash', registry: null })).rejects.toThrow(/not a secure context/)
  })

  it("with withoutLocks: 'single-tab' claims without a lock, reusing this tab's id and then the last session's", async () => {
    vi.stubGlobal('navigator', {})
    const registry = new OriginStorage()
    const storage = new TabStorage()
    const single = (tabStorage: TabStorage) => claimSource({ prefix: 'dash', storage: tabStorage, registry, withoutLocks: 'single-tab' })
    const first = await single(storage)
    expect([first.exclusive, first.held, first.reuse]).toEqual([false, true, 'new'])
    // Two claims in one page never share a source, even without locks.
    const second = await single(new TabStorage())
    expect(second.source).not.toBe(first.source)
    await first.release()
    await second.release()
    expect([(await single(storage)).reuse, (await single(new TabStorage())).reuse]).toEqual(['reload', 'takeover'])
  })

  it("a claim without a lock stays held until release(), and its lost never resolves", async () => {
    vi.stubGlobal('navigator', {})
    const claim = await claimSource({ prefix: 'dash', storage: null, registry: null, withoutLocks: 'single-tab' })
    let lost = false
    void claim.lost.then(() => {
      lost = true
    })
    await settle()
    expect([claim.held, lost]).toEqual([true, false])
    await claim.release()
    await settle()
    expect([claim.held, lost]).toEqual([false, false])
  })

  it("where Web Locks exist, withoutLocks: 'single-tab' changes nothing: the claim is made with a lock", async () => {
    const locks = new FakeLocks()
    vi.stubGlobal('navigator', { locks })
    const storage = new TabStorage()
    const claim = await claimSource({ prefix: 'dash', storage, registry: null, withoutLocks: 'single-tab' })
    expect([claim.exclusive, claim.held, locks.isHeld(claim.source)]).toEqual([true, true, true])
    // A duplicated tab finds the id held, as with any locked claim.
    const duplicate = await claimSource({ prefix: 'dash', storage: storage.copy(), registry: null, withoutLocks: 'single-tab' })
    expect(duplicate.source).not.toBe(claim.source)
  })

  it("deletes without locks only what this page does not hold, under withoutLocks: 'single-tab'", async () => {
    vi.stubGlobal('navigator', {})
    const registry = new OriginStorage()
    const indexedDB = new IDBFactory()
    const cleanup = { prefix: 'dash', registry, indexedDB, withoutLocks: 'single-tab' } as const
    const mine = await claimSource({ prefix: 'dash', storage: null, registry, withoutLocks: 'single-tab' })
    expect(await listSources(cleanup)).toMatchObject([{ source: mine.source, held: true }])
    await expect(deleteSource(mine.source, cleanup)).rejects.toThrow(/is held by a tab/)
    await mine.release()
    await deleteSource(mine.source, cleanup)
    expect(await listSources(cleanup)).toEqual([])
  })
})
