/**
 * docs/recipes quote the regions of test/recipes/*.ts (the docs test checks them word for
 * word); here the samples run, against fake locks and storage, and do what the recipes say.
 */
import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import { createEngine, type Engine } from '@tidemark/engine'
import { bindDoc } from '@tidemark/yjs'
import { afterEach, describe, expect, it, vi } from 'vitest'
import * as Y from 'yjs'
import { claimSource, indexedDbPersistence, isLogConfigurationError, openEngine, type SourceLocks } from '../src/index.ts'
import { CURRENT, drainPrevious, openDevice, PREVIOUS, publishTo, sourcesOf } from './recipes/changingTheConfiguration.ts'
import { cleanUp, describeSources, retireDevice } from './recipes/cleaningUpSources.ts'
import { openDashboard, shareState } from './recipes/deviceIdentity.ts'
import { claimOrExplain, claimSingleTab } from './recipes/insecureOrigins.ts'
import type { Screen } from './recipes/screen.ts'

/** Exclusive locks of one origin, as `navigator.locks` shares them between tabs. */
class OriginLocks implements SourceLocks {
  readonly #held = new Set<string>()
  async request(name: string, _options: { ifAvailable: true }, callback: (lock: unknown) => Promise<void> | undefined): Promise<unknown> {
    if (this.#held.has(name)) return callback(null)
    this.#held.add(name)
    try {
      return await callback({ name })
    } finally {
      this.#held.delete(name)
    }
  }
  async query(): Promise<{ held: { name: string }[] }> {
    return { held: [...this.#held].map((name) => ({ name })) }
  }
}

/** One Storage (localStorage or a tab's sessionStorage). */
class MemoryStorage {
  readonly #items = new Map<string, string>()
  get length(): number {
    return this.#items.size
  }
  key(index: number): string | null {
    return [...this.#items.keys()][index] ?? null
  }
  getItem(key: string): string | null {
    return this.#items.get(key) ?? null
  }
  setItem(key: string, value: string): void {
    this.#items.set(key, value)
  }
  removeItem(key: string): void {
    this.#items.delete(key)
  }
}

/** A socket that never opens: a server out of reach. */
class UnreachableSocket {
  binaryType = 'arraybuffer'
  onopen: unknown = null
  onclose: unknown = null
  onerror: unknown = null
  onmessage: unknown = null
  send(): void {}
  close(): void {}
  addEventListener(): void {}
}

/** A browser origin: secure, with its locks, localStorage and IndexedDB; `newTab()` starts a tab session. */
function browser() {
  vi.stubGlobal('navigator', { locks: new OriginLocks() })
  vi.stubGlobal('localStorage', new MemoryStorage())
  vi.stubGlobal('indexedDB', new IDBFactory())
  vi.stubGlobal('WebSocket', UnreachableSocket)
  return { newTab: () => vi.stubGlobal('sessionStorage', new MemoryStorage()) }
}

afterEach(() => {
  vi.useRealTimers()
  vi.unstubAllGlobals()
})

describe('recipes: the samples do what the recipes say', () => {
  it('device identity: a later tab session takes the source over and its seq resumes; offline updates are counted', async () => {
    const { newTab } = browser()
    newTab()
    const first = await openDashboard()
    first.record('temp', 21)
    first.record('temp', 22)
    await first.engine.close()
    await first.claim.release()
    newTab()
    const second = await openDashboard()
    expect([second.claim.source, second.claim.reuse]).toEqual([first.claim.source, 'takeover'])
    expect(second.engine.nextSeq(second.claim.source)).toBe(3)
    second.record('temp', 23)
    expect(second.engine.stats()).toMatchObject({ applied: 3, duplicates: 0 })
    const screen: Screen = { banner: '', error: '' }
    shareState(second.engine, second.claim.source, screen)
    second.record('temp', 24)
    expect(screen.banner).toMatch(/^\d+ updates not shared yet \(connecting\)$/)
    await second.engine.close()
  })

  it('cleaning up: lists the sources, deletes only free ones the server has', async () => {
    const { newTab } = browser()
    const tabs = []
    for (let i = 0; i < 3; i++) {
      newTab()
      tabs.push(await claimSource({ prefix: 'dashboard' }))
    }
    const [mine, synced, unsynced] = tabs as [(typeof tabs)[0], (typeof tabs)[0], (typeof tabs)[0]]
    await synced.release()
    await unsynced.release()
    expect(await describeSources()).toHaveLength(3)
    expect((await describeSources()).filter((line) => line.includes('open in a tab'))).toEqual([expect.stringContaining(mine.source)])
    const deleted = await cleanUp(mine, async (source) => source === synced.source)
    expect(deleted).toEqual([synced.source])
    expect((await describeSources()).map((line) => line.split(':')[0]).sort()).toEqual([mine.source, unsynced.source].sort())
  })

  it('cleaning up: a retired device tab waits for the relay; its source is never handed out again, and is deleted later', async () => {
    const { newTab } = browser()
    newTab()
    const device = await openDashboard()
    device.record('temp', 21)
    shareState(device.engine, device.claim.source, { banner: '', error: '' })
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
    let retired = false
    const retiring = retireDevice(device.engine, device.claim).then(() => {
      retired = true
    })
    // Until the finish is durable and the wait for the relay has begun.
    while (vi.getTimerCount() === 0) await new Promise((resolve) => setImmediate(resolve))
    expect(await describeSources()).toEqual([expect.stringMatching(/: open in a tab, /)])
    vi.advanceTimersByTime(1_000)
    await Promise.resolve()
    expect(retired).toBe(false) // the relay is out of reach: the tab stays open
    device.engine.replica.setSyncStatus({ state: 'connected', lastSync: Date.now(), pendingLocalUpdates: 0, peers: 0, refusal: null }, 0)
    vi.advanceTimersByTime(1_000)
    await retiring
    expect(await describeSources()).toEqual([expect.stringMatching(new RegExp(`^${device.claim.source}: finished, to delete, last claimed `))])
    // A reload of that tab, and a new tab session, each get a new source.
    const reloaded = await claimSource({ prefix: 'dashboard' })
    newTab()
    const next = await claimSource({ prefix: 'dashboard' })
    expect([reloaded.reuse, next.reuse, reloaded.source === device.claim.source, next.source === device.claim.source]).toEqual(['new', 'new', false, false])
    expect(await cleanUp(next, async () => true)).toEqual([device.claim.source]) // later: the server has all of it
    expect((await indexedDB.databases()).map(({ name }) => name)).not.toContain(device.claim.database)
  })

  it('changing the configuration: a new source per tab; the previous logs are published, then deleted, except one an old tab still writes', async () => {
    const { newTab } = browser()
    /** An old build's tab: `n` readings of its source under the previous configuration. */
    const oldTab = async (n: number) => {
      newTab()
      const claim = await claimSource({ prefix: PREVIOUS.prefix })
      const engine = await openEngine({ ...PREVIOUS.options, persistence: indexedDbPersistence({ name: claim.database, claim }) })
      await engine.ingest(Array.from({ length: n }, (_, i) => ({ id: `${claim.source}-${i + 1}`, source: claim.source, seq: i + 1, ts: 1_000 + i, key: 'temp', value: 20 + i }))).durable
      return { claim, engine }
    }
    const closed = [await oldTab(3), await oldTab(2)]
    const stillOpen = await oldTab(1)
    for (const { claim, engine } of closed) {
      await engine.close()
      await claim.release()
    }
    // The previous log refuses the current configuration.
    newTab()
    const reclaim = await claimSource({ prefix: PREVIOUS.prefix })
    await expect(openEngine({ ...CURRENT.options, persistence: indexedDbPersistence({ name: reclaim.database, claim: reclaim }) })).rejects.toSatisfy(isLogConfigurationError)
    await reclaim.release()
    newTab()
    const device = await openDevice()
    expect([device.claim.source.startsWith(`${CURRENT.prefix}-`), device.claim.reuse, device.engine.replica.configuration]).toEqual([true, 'new', expect.stringContaining('900000')])
    // What each drained log published, read by a dashboard of the previous configuration.
    const published = new Map<string, number>()
    const publish = async (engine: Engine, source: string): Promise<void> => {
      const doc = new Y.Doc()
      bindDoc(engine, doc)
      const dashboard = createEngine(PREVIOUS.options)
      bindDoc(dashboard, doc, { readOnly: true })
      published.set(source, dashboard.results().reduce((sum, r) => sum + r.count, 0))
    }
    // A log whose publishing fails (a refused token) is kept for a later run; the others are drained past it.
    const [failing, other] = closed as [(typeof closed)[0], (typeof closed)[0]]
    const refusing = async (engine: Engine, source: string): Promise<void> => {
      if (source === failing.claim.source) throw new Error('tidemark:refused room-not-allowed')
      await publish(engine, source)
    }
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined)
    expect(await drainPrevious(refusing)).toEqual([other.claim.source])
    expect(warn.mock.calls.map(([message]) => String(message))).toEqual([`${failing.claim.source} is kept for a later run: tidemark:refused room-not-allowed`])
    expect(await sourcesOf(PREVIOUS.prefix)).toEqual([failing.claim.source, stillOpen.claim.source].sort())
    const drained = [other.claim.source, ...(await drainPrevious(publish))]
    expect(drained.sort()).toEqual(closed.map(({ claim }) => claim.source).sort())
    expect(Object.fromEntries(published)).toEqual(Object.fromEntries(closed.map(({ claim }, i) => [claim.source, 3 - i])))
    expect(await sourcesOf(PREVIOUS.prefix)).toEqual([stillOpen.claim.source])
    const databases = (await indexedDB.databases()).map(({ name }) => name)
    for (const { claim } of closed) expect(databases).not.toContain(claim.database)
    // Once the old tab is closed, the next run drains its log too.
    await stillOpen.engine.close()
    await stillOpen.claim.release()
    expect(await drainPrevious(publish)).toEqual([stillOpen.claim.source])
    expect([published.get(stillOpen.claim.source), await sourcesOf(PREVIOUS.prefix)]).toEqual([1, []])
    expect(await sourcesOf(CURRENT.prefix)).toEqual([device.claim.source])
    await device.engine.close()
  })

  it('changing the configuration: publishTo resolves once acknowledged and settleMs passed with no sync exchange since; rejects on a refusal or after timeoutMs', async () => {
    browser()
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'], now: 1_000_000 })
    const publish = publishTo('ws://relay.example.com', 'fleet-a', (source, replica) => `token for ${source} as ${replica}`)
    /** Starts publishing an engine of the previous configuration; `outcome()` says how it ended so far. */
    const start = async (source: string) => {
      const engine = createEngine({ ...PREVIOUS.options, replicaId: source })
      let outcome = 'pending'
      publish(engine, source).then(
        () => {
          outcome = 'resolved'
        },
        (error: Error) => {
          outcome = error.message
        },
      )
      await new Promise((resolve) => setImmediate(resolve)) // the binding and the room report their first status
      const status = (changes: Partial<ReturnType<Engine['syncStatus']>>) =>
        engine.replica.setSyncStatus({ state: 'connected', lastSync: Date.now(), pendingLocalUpdates: 0, peers: 0, refusal: null, ...changes }, 0)
      const advance = async (ms: number) => {
        vi.advanceTimersByTime(ms)
        await Promise.resolve()
        return outcome
      }
      return { status, advance }
    }
    // Polled each second: acknowledged from the 3rd s on, then a reconnect's sync exchange after
    // the 4th starts the 5 s wait over: steady again from the 6th s, resolved at the 11th.
    const settling = await start('sensor-a1')
    settling.status({ pendingLocalUpdates: 2 })
    expect(await settling.advance(1_000)).toBe('pending')
    settling.status({ lastSync: 1_000_500 }) // all acknowledged
    expect(await settling.advance(3_000)).toBe('pending')
    settling.status({ lastSync: 1_004_200 }) // a new sync exchange
    expect(await settling.advance(6_000)).toBe('pending') // 8 s since the first acknowledgement
    expect(await settling.advance(1_000)).toBe('resolved')
    // A refusal ends it at the next poll.
    const refused = await start('sensor-b2')
    refused.status({ state: 'offline', refusal: 'tidemark:room-not-allowed fleet-a/sensor-b2' })
    expect(await refused.advance(1_000)).toBe('publishing sensor-b2: tidemark:room-not-allowed fleet-a/sensor-b2')
    // Never acknowledged: given up after timeoutMs.
    const unheard = await start('sensor-c3')
    unheard.status({ state: 'connecting', lastSync: null, pendingLocalUpdates: 1 })
    expect(await unheard.advance(120_000)).toBe('pending')
    expect(await unheard.advance(1_000)).toBe('publishing sensor-c3: not acknowledged for 5000 ms within 120000 ms')
  })

  it('insecure origins: the error names cause and fix; the single-tab fallback claims and says so', async () => {
    vi.stubGlobal('navigator', {})
    vi.stubGlobal('isSecureContext', false)
    vi.stubGlobal('location', { origin: 'http://192.168.1.20:5173' })
    vi.stubGlobal('localStorage', new MemoryStorage())
    vi.stubGlobal('sessionStorage', new MemoryStorage())
    const screen: Screen = { banner: '', error: '' }
    expect(await claimOrExplain(screen)).toBeNull()
    expect(screen.error).toMatch(/not a secure context: http:\/\/192\.168\.1\.20:5173 .* Serve the page over https, or open it from http:\/\/localhost/)
    const claim = await claimSingleTab(screen)
    expect([claim.exclusive, claim.held]).toEqual([false, true])
    expect(screen.banner).toMatch(/one tab only/)
    await claim.release()
  })
})
