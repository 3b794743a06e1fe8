/**
 * One browser origin for the source-claim tests: its Web Locks (shared by its tabs), its
 * localStorage (the registry), its IndexedDB, and a sessionStorage per tab session.
 */
import { IDBFactory } from 'fake-indexeddb'
import { claimSource, type SourceLocks, type SourceMemory, type SourceRegistryStorage } from '../src/index.ts'

/** Exclusive locks of one origin, as `navigator.locks` shares them between tabs. */
export class FakeLocks implements SourceLocks {
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

  /** What `navigator.locks.query()` says about the origin's held locks. */
  async query(): Promise<{ held: { name: string }[] }> {
    return { held: [...this.#held.keys()].map((name) => ({ name })) }
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
export class TabStorage implements SourceMemory {
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

/** The origin's localStorage, shared by its tabs. */
export class OriginStorage implements SourceRegistryStorage {
  readonly items = new Map<string, string>()
  get length(): number {
    return this.items.size
  }
  key(index: number): string | null {
    return [...this.items.keys()][index] ?? null
  }
  getItem(key: string): string | null {
    return this.items.get(key) ?? null
  }
  setItem(key: string, value: string): void {
    this.items.set(key, value)
  }
  removeItem(key: string): void {
    this.items.delete(key)
  }
}

/** One browser origin: its locks, its localStorage, its IndexedDB; each tab session has its own sessionStorage. */
export function origin() {
  const locks = new FakeLocks()
  const registry = new OriginStorage()
  const indexedDB = new IDBFactory()
  const tab = (storage = new TabStorage()) => claimSource({ prefix: 'dash', locks, storage, registry })
  return { locks, registry, indexedDB, tab, cleanup: { prefix: 'dash', locks, registry, indexedDB } }
}
