import type { Engine, WindowChange } from '@tidemark/engine'
import { EngineFrame } from './engineFrame.ts'
import type { FrameScheduler } from './frameScheduler.ts'
import { lookup, sameWindow, startsOf, type WindowAddress, type WindowIndex } from './windowIndex.ts'

/** What the bindings read from an engine; a structural subset, so tests can pass a fake. */
export type ObservedEngine = Pick<
  Engine,
  'subscribe' | 'results' | 'lateEvents' | 'stats' | 'syncStatus' | 'history' | 'watermark'
>

type FrameListener = (frame: EngineFrame) => void

/**
 * One engine subscription shared by every observer under a provider (or by
 * one store). The engine notifies synchronously, once per batch; the feed
 * gathers those changes and hands them to its listeners once per frame.
 * A listener for one window is called only in frames that changed that
 * window, found through an index, so a frame costs what it changed, not what
 * is mounted. It listens to the engine only while it has listeners, so a feed
 * that React made and threw away holds nothing.
 */
export class EngineFeed {
  readonly engine: ObservedEngine
  #scheduler: FrameScheduler
  #listeners = new Set<FrameListener>()
  #watchers: WindowIndex<Set<FrameListener>> = new Map()
  #watching = 0
  #pending: WindowChange[] = []
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
    if (window === undefined) this.#listeners.add(listener)
    else this.#watch(listener, window)
    this.#stopEngine ??= this.engine.subscribe(this.#onChanges)
    let subscribed = true
    return () => {
      if (!subscribed) return
      subscribed = false
      if (window === undefined) this.#listeners.delete(listener)
      else this.#unwatch(listener, window)
      if (this.#listeners.size > 0 || this.#watching > 0 || this.#stopEngine === null) return
      this.#stopEngine()
      this.#stopEngine = null
      this.#cancelFrame?.()
      this.#cancelFrame = null
      this.#pending = []
    }
  }

  #watch(listener: FrameListener, window: WindowAddress): void {
    const byStart = startsOf(this.#watchers, window)
    let watchers = byStart.get(window.start)
    if (watchers === undefined) {
      watchers = new Set()
      byStart.set(window.start, watchers)
    }
    if (!watchers.has(listener)) this.#watching++
    watchers.add(listener)
  }

  /** Removes the listener and prunes emptied maps, so windows that came and went leave no entries. */
  #unwatch(listener: FrameListener, window: WindowAddress): void {
    const byKey = this.#watchers.get(window.window)
    const byStart = byKey?.get(window.key)
    const watchers = byStart?.get(window.start)
    if (byKey === undefined || byStart === undefined || watchers === undefined || !watchers.delete(listener)) return
    this.#watching--
    if (watchers.size > 0) return
    byStart.delete(window.start)
    if (byStart.size > 0) return
    byKey.delete(window.key)
    if (byKey.size === 0) this.#watchers.delete(window.window)
  }

  #onChanges = (changes: readonly WindowChange[]): void => {
    // Copied, not kept: the engine may reuse its array once the call returns.
    for (const change of changes) this.#pending.push(change)
    this.#cancelFrame ??= this.#scheduler.schedule(this.#runFrame)
  }

  #runFrame = (): void => {
    this.#cancelFrame = null
    const frame = new EngineFrame(this.#pending)
    this.#pending = []
    for (const listener of this.#listeners) listener(frame)
    if (this.#watching === 0) return
    // Each touched window's watchers once, after the whole frame is known.
    const touched = new Set<Set<FrameListener>>()
    for (const { result, previous } of frame.changes) {
      const watchers = lookup(this.#watchers, result)
      if (watchers !== undefined) touched.add(watchers)
      if (previous === undefined || sameWindow(previous, result)) continue
      const moved = lookup(this.#watchers, previous)
      if (moved !== undefined) touched.add(moved)
    }
    for (const watchers of touched) for (const listener of watchers) listener(frame)
  }
}
