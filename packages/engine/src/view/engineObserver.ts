import type { EngineFeed } from './engineFeed.ts'
import type { EngineFrame } from './engineFrame.ts'
import type { EngineSlice } from './engineSlice.ts'
import { callEach } from './frameTasks.ts'

/**
 * One consumer's view of one slice. Its snapshot changes only in a frame that
 * touched the slice (a slice that watches one window is not even called in
 * other frames) and only when the value actually differs, so
 * `useSyncExternalStore` sees a referentially stable snapshot and a component
 * renders at most once per frame. Making one has no side effects (React may
 * make and drop it); it listens to the feed only while subscribed.
 *
 * @example
 * const feed = new EngineFeed(engine, createFrameScheduler())
 * const minutes = new EngineObserver(feed, windowsSlice({ window: 'tumbling:60000' }))
 * const stop = minutes.subscribe(() => render(minutes.getSnapshot())) // at most once per frame
 * // React: useSyncExternalStore(minutes.subscribe, minutes.getSnapshot)
 */
export class EngineObserver<T> {
  #feed: EngineFeed
  #slice: EngineSlice<T>
  #snapshot: T
  #listeners = new Set<() => void>()
  #stopFeed: (() => void) | null = null
  /** How many changes the feed had when the snapshot was last read from the engine (`feed.published`). */
  #readAt: number

  constructor(feed: EngineFeed, slice: EngineSlice<T>) {
    this.#feed = feed
    this.#slice = slice
    this.#readAt = feed.published
    this.#snapshot = slice.read(feed.engine)
  }

  /** The last selection any `select` getter of this observer returned, with the snapshot it came from. */
  #selected: { readonly snapshot: T; readonly selection: unknown } | null = null

  /** The slice's current value: the same object until a frame changed it. */
  getSnapshot = (): T => this.#snapshot

  /**
   * A `getSnapshot` for a selection of the slice: `selector` runs only when
   * the snapshot changed, and the previous selection is returned instead of
   * the new one while `isEqual` says they are the same, also when a
   * re-render made a new `selector` closure (and so a new getter).
   */
  select<S>(selector: (value: T) => S, isEqual: (a: S, b: S) => boolean): () => S {
    let memo: { readonly snapshot: T; readonly selection: S } | null = null
    return () => {
      const snapshot = this.#snapshot
      if (memo !== null && Object.is(memo.snapshot, snapshot)) return memo.selection
      let selection = selector(snapshot)
      const previous = memo ?? (this.#selected as { readonly selection: S } | null)
      if (previous !== null && isEqual(previous.selection, selection)) selection = previous.selection
      memo = { snapshot, selection }
      this.#selected = memo
      return selection
    }
  }

  /** Calls `listener` after each frame that changed the snapshot; returns the unsubscribe function. Bound, so it can be passed as is. */
  subscribe = (listener: () => void): (() => void) => {
    if (this.#stopFeed === null) {
      // The feed first: when it throws (over a closed engine), nothing of this call is kept.
      this.#stopFeed = this.#feed.subscribe(this.#onFrame, this.#slice.watches)
      this.#listeners.add(listener)
      // The engine may have changed between the render that made this
      // observer and the commit that subscribes it.
      this.#refresh()
    } else this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
      if (this.#listeners.size === 0 && this.#stopFeed !== null) {
        this.#stopFeed()
        this.#stopFeed = null
      }
    }
  }

  #onFrame = (frame: EngineFrame): void => {
    const watches = this.#slice.watches
    // The window's last change in this frame was made before this observer read the engine (it
    // was mounted between the change and the frame): what it read is as new, or newer (a window
    // that left live state since).
    if (watches !== undefined && this.#feed.changedAt(watches) <= this.#readAt) return
    this.#publish(this.#slice.advance(this.#snapshot, frame, this.#feed.engine))
  }

  #refresh(): void {
    this.#readAt = this.#feed.published
    this.#publish(this.#slice.share(this.#snapshot, this.#slice.read(this.#feed.engine)))
  }

  #publish(next: T): void {
    if (next === this.#snapshot) return
    this.#snapshot = next
    // Every listener hears the change even when one throws: one skipped would miss it for good.
    callEach(this.#listeners, (listener) => listener())
  }
}
