import { afterEach, describe, expect, it, vi } from 'vitest'
import { claimSource, type SourceLocks, type SourceMemory } from '../src/index.ts'

afterEach(() => {
  vi.unstubAllGlobals()
})

/** Exclusive locks of one origin, as `navigator.locks` shares them between tabs. */
class FakeLocks implements SourceLocks {
  readonly #held = new Map<string, (error: unknown) => void>()

  request(name: string, _options: { ifAvailable: true }, callback: (lock: unknown) => Promise<void> | undefined): Promise<unknown> {
    return new Promise((resolve, reject) => {
      // Like the real API, the callback runs in a later task than request().
      queueMicrotask(() => {
        if (this.#held.has(name)) {
          Promise.resolve(callback(null)).then(resolve, reject)
          return
        }
        this.#held.set(name, reject)
        const settle = (outcome: () => void) => {
          if (this.#held.get(name) !== reject) return
          this.#held.delete(name)
          outcome()
        }
        Promise.resolve(callback({ name, mode: 'exclusive' })).then(
          (value) => settle(() => resolve(value)),
          (error: unknown) => settle(() => reject(error)),
        )
      })
    })
  }

  isHeld(name: string): boolean {
    return this.#held.has(`tidemark:source:${name}`)
  }

  /** What `request(name, { steal: true })` from another tab does to the holder. */
  steal(source: string): void {
    const name = `tidemark:source:${source}`
    const reject = this.#held.get(name)
    this.#held.delete(name)
    reject?.(new DOMException('The lock was stolen.', 'AbortError'))
  }
}

/** One tab's sessionStorage; `copy()` is what duplicating the tab does. */
class TabStorage implements SourceMemory {
  readonly #items: Map<string, string>
  constructor(items: Map<string, string> = new Map()) {
    this.#items = items
  }
  getItem(key: string): string | null {
    return this.#items.get(key) ?? null
  }
  setItem(key: string, value: string): void {
    this.#items.set(key, value)
  }
  copy(): TabStorage {
    return new TabStorage(new Map(this.#items))
  }
}

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
    expect(after.source).toBe(before.source)
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
