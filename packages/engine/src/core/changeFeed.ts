import { OverflowError } from '../errors/overflowError.ts'
import type { WindowChange } from '../windows/windowResult.ts'
import { notifyEach, listenerOf } from '../errors/listenerError.ts'

type Listener = (changes: readonly WindowChange[]) => void

/** Batches listeners may publish within one delivery: past it, a listener calling the engine on every change would never let the delivery end. */
const MAX_LISTENER_BATCHES = 1_000

/**
 * Synchronous change notification (the engine notifies synchronously;
 * schedulers coalesce) plus a Web Streams view of the same feed. An engine's
 * stand-in (the worker's page mirror) serves `subscribe` and `changes()` with one.
 *
 * @example
 * const feed = new ChangeFeed()
 * const stop = feed.subscribe((changes) => console.log(changes.length))
 * feed.publish(changes) // every listener, in subscription order; one that throws does not stop the others
 * // A listener that publishes again (it called the engine) waits: every listener hears batches in order.
 * const readable = feed.stream() // the same batches as a ReadableStream
 * feed.close() // listeners dropped, streams ended
 */
export class ChangeFeed {
  readonly #listeners = new Set<Listener>()
  readonly #streams = new Set<ReadableStreamDefaultController<readonly WindowChange[]>>()
  /** Batches published by a listener while a batch is delivered: delivered next, in order. */
  readonly #waiting: (readonly WindowChange[])[] = []
  /** The batch being delivered, if any. */
  #delivering: readonly WindowChange[] | undefined

  /** Listeners subscribed now. */
  get listeners(): number {
    return this.#listeners.size
  }

  /** Calls `listener` with every published batch until the returned function is called. */
  subscribe(listener: Listener): () => void {
    // A wrapper per subscription, so subscribing one function twice gives two independent subscriptions.
    const given = listenerOf(listener, 'subscribe')
    const entry: Listener = (changes) => given(changes)
    this.#listeners.add(entry)
    return () => {
      this.#listeners.delete(entry)
    }
  }

  /**
   * Notifies every listener. Called after every batch, also with no window change,
   * so views of stats and the late lane stay current. `quiet`: the operation changed nothing at
   * all (a tick with nothing due), so a listener's call that made it is not announced.
   */
  publish(changes: readonly WindowChange[], quiet?: boolean): void {
    // A listener that calls the engine publishes from inside this loop: its batch waits until every
    // listener has this one, so each hears the batches in the order they happened.
    if (this.#delivering) {
      // Unless it changed nothing: a listener that ticks on every notification would tick for ever.
      if (!quiet) this.#waiting.push(changes)
      return
    }
    try {
      // This batch, then those its listeners published, in order.
      for (let batch: readonly WindowChange[] | undefined = changes, i = 0; batch; batch = this.#waiting[i++]) {
        this.#delivering = batch
        notifyEach(this.#listeners, batch)
      }
    } finally {
      this.#waiting.length = 0
      this.#delivering = undefined
    }
  }

  /**
   * Throws once listeners published `MAX_LISTENER_BATCHES` batches within one delivery: a listener
   * that calls the engine on every change (each call a change it answers again) never lets the
   * delivery end. The engine checks it before an operation changes anything.
   *
   * @example
   * feed.assertSettles() // in a listener's 1,001st call of the engine within one delivery: throws
   */
  assertSettles(): void {
    if (this.#waiting.length >= MAX_LISTENER_BATCHES)
      throw new Error(`engine called by its subscribers ${MAX_LISTENER_BATCHES} times within one notification: a subscriber that calls it on every change never settles`)
  }

  /**
   * A ReadableStream of change batches. At most `highWaterMark` batches wait for a
   * slow reader; past that the stream errors with `OverflowError` rather than buffer without bound.
   */
  stream(highWaterMark = 1024): ReadableStream<readonly WindowChange[]> {
    let unsubscribe: (() => void) | null = null
    let stream: ReadableStreamDefaultController<readonly WindowChange[]> | null = null
    return new ReadableStream<readonly WindowChange[]>(
      {
        start: (controller) => {
          stream = controller
          this.#streams.add(controller)
          unsubscribe = this.subscribe((changes) => {
            if (changes.length === 0) return
            if ((controller.desiredSize ?? 0) <= 0) {
              unsubscribe?.()
              this.#streams.delete(controller)
              controller.error(new OverflowError('changes() stream', `reader fell ${highWaterMark} batches behind`))
              return
            }
            controller.enqueue(changes)
          })
        },
        cancel: () => {
          unsubscribe?.()
          if (stream !== null) this.#streams.delete(stream)
        },
      },
      new CountQueuingStrategy({ highWaterMark }),
    )
  }

  /** Ends every listener and closes every stream. */
  close(): void {
    this.#listeners.clear()
    for (const controller of this.#streams) controller.close()
    this.#streams.clear()
  }
}
