import { reportUnlessWithdrawn } from '../common/reportError.ts'
import { lockNames, type WorkerLocks } from '../page/platform.ts'
import type { HostClient } from './hostClient.ts'

/**
 * The host's watch on each connected page's tab. A tab holds its own lock while it lives, so
 * the host's request for that lock is granted when the tab is gone, however it ended (closed,
 * crashed, discarded), and the page can be dropped without waiting for a `bye` that never comes.
 * Without Web Locks, or for a page that gave no tab id, nothing is watched.
 *
 * @example
 * const watches = new TabWatches(navigator.locks, 'fleet')
 * watches.watch(client, () => host.drop(client.link))
 * // when the page said bye:
 * watches.forget(client)
 */
export class TabWatches {
  readonly #locks: WorkerLocks | null
  readonly #name: string
  readonly #watches = new Map<HostClient, AbortController>()

  constructor(locks: WorkerLocks | null, name: string) {
    this.#locks = locks
    this.#name = name
  }

  /** Calls `gone` once the tab of `client` is gone. */
  watch(client: HostClient, gone: () => void): void {
    const locks = this.#locks
    if (locks === null || client.tab === '') return
    const controller = new AbortController()
    this.#watches.set(client, controller)
    void locks
      .request(lockNames.tab(this.#name, client.tab), { signal: controller.signal }, () => {
        gone()
        return undefined
      })
      // Withdrawn by forget(): expected. Anything else is reported (the tab is then not watched).
      .catch(reportUnlessWithdrawn(controller.signal))
  }

  /** Stops watching the tab of `client` (the page left, or the host dropped it). */
  forget(client: HostClient): void {
    this.#watches.get(client)?.abort()
    this.#watches.delete(client)
  }

  /** Stops every watch: the host is shutting down. */
  forgetAll(): void {
    for (const watch of this.#watches.values()) watch.abort()
    this.#watches.clear()
  }
}
