/** A held lock; `release()` lets the next waiter have it. */
export interface DeviceLease {
  release(): void
}

/**
 * Who may run a device. Exactly one page of the browser runs each device (its engine
 * writes the device's source and log), so a page holds the device's lock while it runs it.
 */
export interface DeviceLocks {
  /**
   * Waits for the lock; a waiter whose `signal` aborts never gets it and is never answered (its
   * owner is closing). Requests are served in order; a lock manager's failure rejects.
   */
  acquire(name: string, signal: AbortSignal): Promise<DeviceLease>
  /**
   * Resolves once every `acquire` this page made so far is in the lock manager's queue (or
   * granted). Tell another page about a request only after this: a message can otherwise
   * reach that page before the request reaches the lock manager, and a page that lets the
   * lock go and asks for it again on that message would get it back first.
   */
  queued(): Promise<void>
}

/**
 * The browser's Web Locks (`navigator.locks`), shared by every tab of the origin.
 *
 * @example
 * const locks = webDeviceLocks(navigator.locks)
 * const lease = locks.acquire('tidemark-demo:run:w2000-l10000:d03', signal)
 * await locks.queued() // the request is in the lock manager's queue: now ask its holder to let go
 * control.post({ type: 'takeover', device: 'd03', epoch: 'w2000-l10000' })
 * await lease
 */
export function webDeviceLocks(locks: LockManager): DeviceLocks {
  return {
    acquire(name, signal) {
      return new Promise((resolve, reject) => {
        locks
          .request(name, { signal }, () => {
            if (signal.aborted) return undefined
            return new Promise<void>((release) => resolve({ release: () => release() }))
          })
          .catch((error: unknown) => {
            // An aborted wait rejects with the abort's reason (an AbortError in browsers that predate
            // reasons): the caller asked for that, and as in pageDeviceLocks the waiter is left
            // unanswered. Anything else is a failure.
            if (!(signal.aborted && (error === signal.reason || (error instanceof DOMException && error.name === 'AbortError')))) reject(error)
          })
      })
    },
    // The lock manager answers a page's calls in the order it made them: once it has answered a
    // query, it holds every request made before.
    queued: () => locks.query().then(() => undefined),
  }
}

/**
 * Locks within one page (Node, tests): the same order and abort rules, no other tabs.
 *
 * @example
 * const locks = pageDeviceLocks()
 * const lease = await locks.acquire('d01', new AbortController().signal)
 * lease.release()
 */
export function pageDeviceLocks(): DeviceLocks {
  const queues = new Map<string, { grant: () => void; signal: AbortSignal }[]>()
  const held = new Set<string>()
  const next = (name: string): void => {
    const queue = queues.get(name) ?? []
    while (queue.length > 0) {
      const waiter = queue.shift() as { grant: () => void; signal: AbortSignal }
      if (waiter.signal.aborted) continue
      held.add(name)
      waiter.grant()
      return
    }
    held.delete(name)
  }
  return {
    acquire(name, signal) {
      return new Promise((resolve) => {
        const grant = (): void => {
          let released = false
          resolve({
            release: () => {
              if (released) return
              released = true
              next(name)
            },
          })
        }
        if (!held.has(name)) {
          held.add(name)
          grant()
          return
        }
        const queue = queues.get(name) ?? []
        queue.push({ grant, signal })
        queues.set(name, queue)
      })
    },
    // Requests join their queue as acquire() is called.
    queued: () => Promise.resolve(),
  }
}
