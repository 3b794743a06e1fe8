/**
 * The tasks waiting for the next frame, shared by every scheduler. A task is
 * a set member, so scheduling it again before the frame runs coalesces into
 * the one run.
 */
export class FrameTasks {
  #waiting = new Set<() => void>()
  /** Bumped when a frame starts, so a stale cancel cannot remove a task scheduled for a later frame. */
  #frame = 0

  get size(): number {
    return this.#waiting.size
  }

  /** Adds `task` to the next frame; returns a function that takes it out again. */
  add(task: () => void): () => void {
    this.#waiting.add(task)
    const frame = this.#frame
    return () => {
      if (frame === this.#frame) this.#waiting.delete(task)
    }
  }

  /**
   * Runs every task that was waiting when the frame started, once. Tasks added
   * meanwhile wait for the next frame. One task that throws does not starve
   * the others; the first error is rethrown after all ran.
   */
  run(): void {
    const due = this.#waiting
    this.#waiting = new Set()
    this.#frame++
    callEach(due, (task) => task())
  }
}

/**
 * Calls `call` for every item, even when one throws: a frame's readers (hooks, store
 * listeners) each get the frame, or would miss its changes for good. The first error is
 * rethrown once all were called.
 *
 * @example
 * callEach(listeners, (listener) => listener(frame))
 */
export function callEach<T>(items: Iterable<T>, call: (item: T) => void): void {
  let failed = false
  let firstError: unknown
  for (const item of items) {
    try {
      call(item)
    } catch (error) {
      if (!failed) {
        failed = true
        firstError = error
      }
    }
  }
  if (failed) throw firstError
}
