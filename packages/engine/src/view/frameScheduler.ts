import { FrameTasks } from './frameTasks.ts'

/**
 * Runs work at the next frame, coalesced: however often a task is scheduled
 * between two frames, it runs once.
 */
export interface FrameScheduler {
  /**
   * Runs `task` once at the next frame. Scheduling a task that already waits
   * for that frame does nothing more. Returns a function that cancels it.
   */
  schedule(task: () => void): () => void
}

/** Frames at 60 Hz where the host has no `requestAnimationFrame` (Node, workers, SSR). */
const fallbackFrameMs = 16

/**
 * A scheduler that runs at most once per animation frame through
 * `requestAnimationFrame`, or `setTimeout(…, 16)` where there is none.
 * The host's clock is looked up when a frame is requested, not when the
 * scheduler is made, so a polyfill installed later is honoured.
 *
 * @example
 * const scheduler = createFrameScheduler()
 * const cancel = scheduler.schedule(() => console.log('frame'))
 * scheduler.schedule(onFrame) // same frame, one run per distinct task
 * cancel()
 */
export function createFrameScheduler(): FrameScheduler {
  const tasks = new FrameTasks()
  let cancelRequest: (() => void) | null = null

  const runFrame = (): void => {
    cancelRequest = null
    tasks.run()
  }

  return {
    schedule(task) {
      const remove = tasks.add(task)
      cancelRequest ??= requestFrame(runFrame)
      return () => {
        remove()
        if (tasks.size === 0 && cancelRequest !== null) {
          cancelRequest()
          cancelRequest = null
        }
      }
    },
  }
}

function requestFrame(callback: () => void): () => void {
  if (typeof globalThis.requestAnimationFrame === 'function') {
    const handle = globalThis.requestAnimationFrame(callback)
    return () => globalThis.cancelAnimationFrame(handle)
  }
  const handle = globalThis.setTimeout(callback, fallbackFrameMs)
  return () => globalThis.clearTimeout(handle)
}
