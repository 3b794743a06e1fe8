import type { Engine } from '../core/engineApi.ts'
import type { WindowChange, WindowResult } from '../windows/windowResult.ts'
import { compactChanges, EngineFrame, UNTOUCHED } from './engineFrame.ts'
import type { FrameScheduler } from './frameScheduler.ts'
import { callEach } from './frameTasks.ts'
import { lookup, place, positionOf, positionsOf, sameWindow, type WindowAddress, type WindowAddressMap } from './windowAddresses.ts'

/** What the bindings read from an engine; a structural subset, so tests can pass a fake. */
export type ObservedEngine = Pick<
  Engine,
  'subscribe' | 'results' | 'lateEvents' | 'stats' | 'syncStatus' | 'history' | 'watermark'
>

type FrameListener = (frame: EngineFrame) => void

/** Changes waiting for a frame before they are compacted to one per window. */
const COMPACT_AT = 4096

/** The listeners of one window, and what the frame being dispatched did to it. */
interface Watch {
  readonly listeners: Set<FrameListener>
  /** Number of the last frame that touched the window. */
  frame: number
  /** Its value after that frame; `null` when retracted or moved away. */
  latest: WindowResult | null
  /** Where the change that gave `latest` stands among the changes published to the feed (`published`). */
  seq: number
}

/**
 * One engine subscription shared by every observer under a provider (or by
 * one store). The engine notifies synchronously, once per batch; the feed
 * gathers those changes and hands them to its listeners once per frame.
 * A listener for one window is called only in frames that changed that
 * window, found through an index, so a frame costs what it changed, not what
 * is mounted. It listens to the engine only while it has listeners, so a feed
 * that React made and threw away holds nothing.
 *
 * @example
 * const feed = new EngineFeed(engine, createFrameScheduler())
 * const stop = feed.subscribe((frame) => console.log(frame.changes.length, 'changes this frame'))
 */
export class EngineFeed {
  /** The engine this feed listens to. */
  readonly engine: ObservedEngine
  #scheduler: FrameScheduler
  #listeners = new Set<FrameListener>()
  #watches: WindowAddressMap<Watch> = new Map()
  #watching = 0
  #frames = 0
  #pending: WindowChange[] = []
  /** Changes the engine published to this feed so far. */
  #published = 0
  /**
   * The first `#compacted` changes of `#pending` were compacted: where each stands among the
   * published ones is no longer known, only that none stands after the last of them.
   */
  #compacted = 0
  #compactAt = COMPACT_AT
  /** Changes of windows that left live state were dropped from `#pending` (`#dropLeft`). */
  #dropped = false
  #stopEngine: (() => void) | null = null
  #cancelFrame: (() => void) | null = null

  constructor(engine: ObservedEngine, scheduler: FrameScheduler) {
    this.engine = engine
    this.#scheduler = scheduler
  }

  /**
   * Calls `listener` once per frame in which the engine notified or, with
   * `window`, once per frame that changed that window, until the returned
   * function is called.
   */
  subscribe(listener: FrameListener, window?: WindowAddress): () => void {
    // The engine first: when it throws (a closed engine does), the feed keeps nothing of this call.
    this.#stopEngine ??= this.engine.subscribe(this.#onChanges)
    if (window) this.#watch(listener, window)
    else this.#listeners.add(listener)
    let subscribed = true
    return () => {
      if (!subscribed) return
      subscribed = false
      if (window) this.#unwatch(listener, window)
      else this.#listeners.delete(listener)
      if (this.#listeners.size > 0 || this.#watching > 0 || this.#stopEngine === null) return
      this.#stopEngine()
      this.#stopEngine = null
      this.#cancelFrame?.()
      this.#cancelFrame = null
      this.#pending = []
      this.#dropped = false
      this.#compacted = 0
      this.#compactAt = COMPACT_AT
    }
  }

  #watch(listener: FrameListener, window: WindowAddress): void {
    const byPosition = positionsOf(this.#watches, window)
    let watch = byPosition.get(positionOf(window))
    if (watch === undefined) {
      watch = { listeners: new Set(), frame: -1, latest: null, seq: 0 }
      byPosition.set(positionOf(window), watch)
    }
    if (!watch.listeners.has(listener)) this.#watching++
    watch.listeners.add(listener)
  }

  /** Removes the listener and prunes emptied maps, so windows that came and went leave no entries. */
  #unwatch(listener: FrameListener, window: WindowAddress): void {
    const byKey = this.#watches.get(window.window)
    const byPosition = byKey?.get(window.key)
    const watch = byPosition?.get(positionOf(window))
    if (byKey === undefined || byPosition === undefined || watch === undefined || !watch.listeners.delete(listener)) return
    this.#watching--
    if (watch.listeners.size > 0) return
    byPosition.delete(positionOf(window))
    if (byPosition.size > 0) return
    byKey.delete(window.key)
    if (byKey.size === 0) this.#watches.delete(window.window)
  }

  /** Changes waiting for the next frame (at most one per window once compacted). */
  get pending(): number {
    return this.#pending.length
  }

  /**
   * How many changes the engine has published to this feed: an observer that reads the engine
   * notes it, and a frame's change it counts was already in what the observer read.
   */
  get published(): number {
    return this.#published
  }

  /**
   * While a frame is dispatched: where the last change it carries of the watched window `address`
   * stands among the published ones (`published`), or, for a change of a compacted backlog, where
   * the last change compacted stands (none of them stands after it); 0 when the frame did not touch it.
   */
  changedAt(address: WindowAddress): number {
    const watch = lookup(this.#watches, address)
    return watch === undefined || watch.frame !== this.#frames ? 0 : watch.seq
  }

  #onChanges = (changes: readonly WindowChange[]): void => {
    // Copied, not kept: the engine may reuse its array once the call returns.
    for (const change of changes) this.#pending.push(change)
    this.#published += changes.length
    if (this.#pending.length > this.#compactAt) {
      // Frames are not running (a hidden tab): keep one change per window.
      this.#pending = compactChanges(this.#pending)
      this.#dropLeft()
      this.#compacted = this.#pending.length
      this.#compactAt = Math.max(COMPACT_AT, 2 * this.#pending.length)
    }
    this.#cancelFrame ??= this.#scheduler.schedule(this.#runFrame)
  }

  /**
   * Drops the waiting changes of windows that have left live state since (retention, a session
   * that moved) and that no hook watches, so what waits stays bounded by the live windows and the
   * watched ones. The frame that comes then tells every query it matches: what those changes
   * showed must be read again.
   */
  #dropLeft(): void {
    const live: WindowAddressMap<true> = new Map()
    for (const result of this.engine.results()) place(live, result, true)
    const kept = this.#pending.filter(({ result }) => lookup(live, result) !== undefined || lookup(this.#watches, result) !== undefined)
    if (kept.length === this.#pending.length) return
    this.#pending = kept
    this.#dropped = true
  }

  #runFrame = (): void => {
    this.#cancelFrame = null
    const changes = this.#pending
    const dropped = this.#dropped
    // The first change's place among the published ones; the changes compacted all take the last one's.
    const first = this.#published - changes.length + 1
    const compacted = this.#compacted - 1
    this.#pending = []
    this.#dropped = false
    this.#compacted = 0
    this.#compactAt = COMPACT_AT
    // One pass over the changes: each watched window's value after the
    // frame, and its watchers, found once however often it changed.
    const number = ++this.#frames
    const touched: Watch[] = []
    if (this.#watching > 0) {
      for (let i = 0; i < changes.length; i++) {
        const { type, result, previous } = changes[i] as WindowChange
        const seq = first + Math.max(i, compacted)
        if (previous !== undefined && !sameWindow(previous, result)) this.#touch(previous, null, number, touched, seq)
        this.#touch(result, type === 'retract' ? null : result, number, touched, seq)
      }
    }
    // Answers for this frame only; listeners read their frame while it is dispatched.
    const frame = new EngineFrame(
      changes,
      (address) => {
        const watch = lookup(this.#watches, address)
        if (watch === undefined) return undefined
        return watch.frame === number ? watch.latest : UNTOUCHED
      },
      dropped,
    )
    // Every listener gets the frame even when one throws: its changes are gone from `#pending`.
    callEach(this.#frameListeners(touched), (listener) => listener(frame))
  }

  /** The listeners of a frame: every frame listener, then the watchers of the windows it touched. */
  *#frameListeners(touched: readonly Watch[]): Iterable<FrameListener> {
    yield* this.#listeners
    for (const watch of touched) yield* watch.listeners
  }

  #touch(address: WindowAddress, latest: WindowResult | null, number: number, touched: Watch[], seq: number): void {
    const watch = lookup(this.#watches, address)
    if (watch === undefined) return
    if (watch.frame !== number) {
      watch.frame = number
      touched.push(watch)
    }
    watch.latest = latest
    watch.seq = seq
  }
}
