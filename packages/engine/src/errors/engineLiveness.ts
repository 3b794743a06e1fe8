import { messageOf } from './errorMessage.ts'

/**
 * Whether an engine still serves: open, closed by its owner, or stopped because an operation
 * threw partway (user code in an aggregate: its windows are half updated and no longer what its
 * log replays). Either way it lets go of subscribers and transports once; a stopped engine
 * throws its reason from every later call, `checkpoint()` included.
 *
 * @example
 * const liveness = new EngineLiveness(() => feed.close())
 * const placed = liveness.guard(() => placement.place(...)) // a throw stops the engine
 * liveness.assertOpen() // throws 'engine is closed', or why it stopped
 */
export class EngineLiveness {
  closed = false
  /** Why the engine stopped, or null. */
  stopped: Error | null = null
  readonly #letGo: () => void
  readonly #settles: () => void
  /** True while `guard` runs: the engine's state is half updated, and a call of the engine from user code inside (an aggregate's) would read and change it midway. */
  #busy = false

  /** `letGo` drops subscribers and transports, on close or stop; `settles` throws when subscribers call the engine without end (`ChangeFeed.assertSettles`). */
  constructor(letGo: () => void, settles: () => void = () => {}) {
    this.#letGo = letGo
    this.#settles = settles
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.#letGo()
  }

  /** Throws when the engine stopped or closed; for a call that may change something (`changes`, the default), also when subscribers call it without end. */
  assertOpen(changes = true): void {
    this.assertWhole()
    if (this.closed) throw new Error('engine is closed')
    if (changes) this.#settles()
  }

  /** Throws when the engine's state is half updated: it stopped, or it is inside its own operation (a call from an aggregate's code). */
  assertWhole(): void {
    if (this.stopped !== null) throw this.stopped
    if (this.#busy) throw new Error("engine called from inside its own operation (by an aggregate): call it once that returned")
  }

  /** Runs `work`, during which the engine refuses calls (`assertOpen`); when it throws, stops the engine and throws why. */
  guard<T>(work: () => T): T {
    const busy = this.#busy
    this.#busy = true
    try {
      return work()
    } catch (error) {
      this.stopped ??= new Error(
        `engine stopped: ${messageOf(error)}. Its windows were left half updated: fix the cause, then open the engine again from its log`,
        { cause: error },
      )
      this.close()
      throw this.stopped
    } finally {
      this.#busy = busy
    }
  }
}
