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
}

/**
 * The browser's Web Locks (`navigator.locks`), shared by every tab of the origin.
 *
 * @example
 * const lease = await webDeviceLocks(navigator.locks).acquire('tidemark-demo:run:w2000-l10000:d03', signal)
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
  }
}
