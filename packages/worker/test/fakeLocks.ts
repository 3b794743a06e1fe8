import type { WorkerLocks } from '../src/page/platform.ts'

interface Holder {
  readonly owner: string
  readonly reject: (error: unknown) => void
}

interface Waiter {
  readonly owner: string
  readonly grant: () => void
}

/**
 * The Web Locks of one origin, shared by fake tabs and workers: exclusive locks with a wait
 * queue, `ifAvailable`, `steal` and `signal`, as `navigator.locks` has them. Each context
 * gets its own view (`as(owner)`), so a test can end every lock of a context at once
 * (`crash(owner)`: what closing or crashing a tab does) or leave them held (a frozen tab).
 */
export class FakeLockManager {
  readonly #holders = new Map<string, Holder>()
  readonly #queues = new Map<string, Waiter[]>()
  readonly #endings = new Map<string, (() => void)[]>()
  /** News for frozen contexts (a stolen lock's failed request), delivered when they thaw. */
  readonly #held = new Map<string, (() => void)[]>()
  /** Contexts that went away: what their code still runs (a test's tab object) can take no lock. */
  readonly #gone = new Set<string>()

  as(owner: string): WorkerLocks {
    return {
      request: (name, options, callback) => this.#request(owner, name, options, callback),
      query: () => Promise.resolve(this.query()),
    }
  }

  /** What `navigator.locks.query()` answers: the locks held and the requests waiting, by name. */
  query(): { readonly held: { readonly name: string }[]; readonly pending: { readonly name: string }[] } {
    return {
      held: [...this.#holders.keys()].map((name) => ({ name })),
      pending: [...this.#queues].flatMap(([name, queue]) => queue.map(() => ({ name }))),
    }
  }

  holder(name: string): string | undefined {
    return this.#holders.get(name)?.owner
  }

  /**
   * Holds back (`frozen`) or delivers the news for `owner`'s requests: a frozen tab learns
   * that its lock was stolen only when it thaws, and the test chooses when that is.
   */
  freeze(owner: string, frozen: boolean): void {
    if (frozen) {
      if (!this.#held.has(owner)) this.#held.set(owner, [])
      return
    }
    const news = this.#held.get(owner) ?? []
    this.#held.delete(owner)
    for (const deliver of news) deliver()
  }

  /**
   * Ends every lock `owner` holds or waits for, as when its context goes away; it requests no
   * more. As in a browser, the requests of a context that is gone never settle (no code of it runs).
   */
  crash(owner: string): void {
    this.#gone.add(owner)
    for (const end of this.#endings.get(owner)?.splice(0) ?? []) end()
  }

  #request(
    owner: string,
    name: string,
    options: { readonly ifAvailable?: boolean; readonly steal?: boolean; readonly signal?: AbortSignal },
    callback: (lock: unknown) => Promise<void> | undefined,
  ): Promise<unknown> {
    if (this.#gone.has(owner)) return new Promise(() => {})
    return new Promise((resolve, reject) => {
      let done = false
      let waiting: Waiter | null = null
      const finish = (outcome: () => void): void => {
        if (done) return
        done = true
        if (this.#holders.get(name)?.reject === holder.reject) {
          this.#holders.delete(name)
          this.#next(name)
        }
        outcome()
      }
      const holder: Holder = { owner, reject: (error) => finish(() => reject(error)) }
      const grant = (): void => {
        this.#holders.set(name, holder)
        let kept: Promise<void> | undefined
        try {
          kept = callback({ name })
        } catch (error) {
          finish(() => reject(error))
          return
        }
        Promise.resolve(kept).then(
          (value) => finish(() => resolve(value)),
          (error: unknown) => finish(() => reject(error)),
        )
      }
      const endings = this.#endings.get(owner) ?? []
      endings.push(() => {
        if (waiting !== null) this.#withdraw(name, waiting)
        finish(() => {})
      })
      this.#endings.set(owner, endings)
      queueMicrotask(() => {
        if (options.signal?.aborted === true) return finish(() => reject(options.signal?.reason))
        if (options.steal === true) {
          // The stolen lock goes to the thief at once, ahead of the queue.
          const robbed = this.#holders.get(name)
          this.#holders.delete(name)
          if (robbed !== undefined) {
            const news = (): void => robbed.reject(new DOMException("Lock broken by another request with the 'steal' option.", 'AbortError'))
            const held = this.#held.get(robbed.owner)
            if (held !== undefined) held.push(news)
            else news()
          }
          return grant()
        }
        if (!this.#holders.has(name)) return grant()
        if (options.ifAvailable === true) {
          done = true
          Promise.resolve(callback(null)).then(resolve, reject)
          return
        }
        waiting = { owner, grant }
        const queue = this.#queues.get(name) ?? []
        queue.push(waiting)
        this.#queues.set(name, queue)
        options.signal?.addEventListener('abort', () => {
          if (waiting !== null) this.#withdraw(name, waiting)
          finish(() => reject(options.signal?.reason))
        })
      })
    })
  }

  #withdraw(name: string, waiter: Waiter): void {
    const queue = this.#queues.get(name)
    const at = queue?.indexOf(waiter) ?? -1
    if (queue !== undefined && at >= 0) queue.splice(at, 1)
  }

  #next(name: string): void {
    const next = this.#queues.get(name)?.shift()
    if (next !== undefined) queueMicrotask(next.grant)
  }
}
