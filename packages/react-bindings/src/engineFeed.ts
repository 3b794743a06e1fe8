import type { Engine, WindowChange } from '@tidemark/engine'
import { EngineFrame } from './engineFrame.ts'
import type { FrameScheduler } from './frameScheduler.ts'

/** What the bindings read from an engine; a structural subset, so tests can pass a fake. */
export type ObservedEngine = Pick<
  Engine,
  'subscribe' | 'results' | 'lateEvents' | 'stats' | 'syncStatus' | 'history' | 'watermark'
>

/**
 * One engine subscription shared by every observer under a provider (or by
 * one store). The engine notifies synchronously, once per batch; the feed
 * gathers those changes and hands them to its listeners once per frame.
 * It listens to the engine only while it has listeners, so a feed that React
 * made and threw away holds nothing.
 */
export class EngineFeed {
  readonly engine: ObservedEngine
  #scheduler: FrameScheduler
  #listeners = new Set<(frame: EngineFrame) => void>()
  #pending: WindowChange[] = []
  #stopEngine: (() => void) | null = null
  #cancelFrame: (() => void) | null = null

  constructor(engine: ObservedEngine, scheduler: FrameScheduler) {
    this.engine = engine
    this.#scheduler = scheduler
  }

  /** Calls `listener` once per frame in which the engine notified, until the returned function is called. */
  subscribe(listener: (frame: EngineFrame) => void): () => void {
    this.#listeners.add(listener)
    this.#stopEngine ??= this.engine.subscribe(this.#onChanges)
    return () => {
      this.#listeners.delete(listener)
      if (this.#listeners.size > 0 || this.#stopEngine === null) return
      this.#stopEngine()
      this.#stopEngine = null
      this.#cancelFrame?.()
      this.#cancelFrame = null
      this.#pending = []
    }
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
  }
}
