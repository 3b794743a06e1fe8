import type { Engine } from '@tidemark/engine'
import { reportError } from '../common/reportError.ts'
import type { WorkerClock } from '../page/platform.ts'
import type { FrameMessage } from '../protocol/messages.ts'
import { ChangeCompactor } from './changeCompactor.ts'
import { type HostClient, type HostState, type HostView, readHostState } from './hostClient.ts'

/**
 * The host's frames: gathers the engine's changes between ticks and, about once per frame,
 * hands each client what the tick took and the engine's state as it stood then. Everything a
 * client is sent is read at a tick (a page's first frame too, after the pending tick ran), so
 * no change reaches a page both in a whole-state frame and in the next tick's rows.
 *
 * @example
 * const frames = new FramePump(clock, 16, () => clients.values())
 * frames.attach(engine, false)
 * const first = frames.snapshot(client)
 */
export class FramePump {
  readonly #clock: WorkerClock
  readonly #frameMs: number
  readonly #clients: () => Iterable<HostClient>
  #engine: Engine | null = null
  #compactor = new ChangeCompactor(false)
  #state: HostState | null = null
  #timer: unknown = null
  /** What a client's frame reads from the engine. */
  readonly #view: HostView = {
    history: (at) => this.#engine?.history(at.window, at.key, at.start, at.end) ?? [],
    results: () => this.#engine?.results() ?? [],
  }

  constructor(clock: WorkerClock, frameMs: number, clients: () => Iterable<HostClient>) {
    this.#clock = clock
    this.#frameMs = frameMs
    this.#clients = clients
  }

  /** The engine's changes are taken from now on; `keepsPanes`: every one, not each window's last (discarding mode). */
  attach(engine: Engine, keepsPanes: boolean): void {
    this.#engine = engine
    this.#compactor = new ChangeCompactor(keepsPanes)
    engine.subscribe((changes) => {
      this.#compactor.add(changes)
      this.schedule()
    })
    this.#state = readHostState(engine, null)
  }

  /** An engine is attached: pages can be welcomed. */
  get attached(): boolean {
    return this.#state !== null
  }

  /** A new client's first frame, the whole state; the changes since the last tick go to the others first. */
  snapshot(client: HostClient): FrameMessage {
    const engine = this.#engine as Engine
    if (this.#timer !== null) {
      this.#clock.clearTimeout(this.#timer)
      this.#tick()
    }
    const state = readHostState(engine, this.#state)
    this.#state = state
    return client.snapshot(state, engine.results())
  }

  /** `client` acknowledged a frame: what waits for it goes now, or at the next tick when that is the whole state. */
  acknowledged(client: HostClient): void {
    if (client.resyncing) this.schedule()
    else if (this.#state !== null) client.flush(this.#state, this.#view)
  }

  /** A tick within a frame (a page asked for a history, or the engine changed). */
  schedule(): void {
    if (this.#timer !== null || this.#state === null) return
    this.#timer = this.#clock.setTimeout(this.#tick, this.#frameMs)
  }

  /** No more ticks: the engine is closing. */
  stop(): void {
    this.#clock.clearTimeout(this.#timer)
    this.#timer = null
    this.#engine = null
  }

  #tick = (): void => {
    this.#timer = null
    if (this.#engine === null) return
    const touched = this.#compactor.take()
    const state = readHostState(this.#engine, this.#state)
    this.#state = state
    // Each page takes the tick's rows whatever happens to another's frame.
    for (const client of this.#clients()) {
      try {
        client.absorb(touched, state.stats.openWindows)
        client.flush(state, this.#view)
        client.tellFinished(this.#engine)
      } catch (error) {
        reportError(error)
      }
    }
  }
}
