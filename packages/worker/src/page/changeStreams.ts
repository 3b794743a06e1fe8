import { OverflowError, type WindowChange } from '@tidemark/engine'

/** How many batches of changes a `changes()` reader may fall behind before its stream fails. */
const HIGH_WATER_MARK = 1024

/**
 * The `changes()` streams a remote engine handed out, kept so that `close()` can end them. A
 * reader that falls too far behind gets an `OverflowError` instead of a queue that grows without
 * bound on the page.
 *
 * @example
 * const streams = new ChangeStreams()
 * const readable = streams.open((listener) => engine.subscribe(listener))
 * // on close:
 * streams.closeAll()
 */
export class ChangeStreams {
  readonly #open = new Set<ReadableStreamDefaultController<readonly WindowChange[]>>()

  /** A stream of the change batches `subscribe` delivers (empty batches left out). */
  open(subscribe: (listener: (changes: readonly WindowChange[]) => void) => () => void): ReadableStream<readonly WindowChange[]> {
    let stop: (() => void) | null = null
    let own: ReadableStreamDefaultController<readonly WindowChange[]> | null = null
    return new ReadableStream<readonly WindowChange[]>(
      {
        start: (controller) => {
          own = controller
          this.#open.add(controller)
          stop = subscribe((changes) => {
            if (changes.length === 0) return
            if ((controller.desiredSize ?? 0) <= 0) {
              stop?.()
              this.#open.delete(controller)
              controller.error(new OverflowError('changes() stream', `reader fell ${HIGH_WATER_MARK} batches behind`))
              return
            }
            controller.enqueue(changes)
          })
        },
        cancel: () => {
          stop?.()
          if (own !== null) this.#open.delete(own)
        },
      },
      new CountQueuingStrategy({ highWaterMark: HIGH_WATER_MARK }),
    )
  }

  /** Ends every stream still open: its reader sees the end, not an error. */
  closeAll(): void {
    for (const controller of this.#open) controller.close()
    this.#open.clear()
  }
}
