import type { FrameScheduler } from './frameScheduler.ts'
import { FrameTasks } from './frameTasks.ts'

/** A scheduler whose frames run only when the caller says so. */
export interface ManualScheduler extends FrameScheduler {
  /**
   * Runs one frame: every task scheduled before this call, once. Tasks
   * scheduled while it runs wait for the next `flush()`. If tasks throw, all
   * still run and the first error is rethrown.
   */
  flush(): void
  /** Tasks waiting for the next frame. */
  readonly pending: number
}

/**
 * A scheduler for tests and Node: nothing runs until `flush()`, which runs
 * exactly one frame. No timers are involved.
 *
 * @example
 * const scheduler = createManualScheduler()
 * render(<EngineProvider engine={engine} scheduler={scheduler}><Chart /></EngineProvider>)
 * engine.ingest(events)          // engine notifies; nothing renders yet
 * act(() => scheduler.flush())   // one frame: each affected component renders once
 */
export function createManualScheduler(): ManualScheduler {
  const tasks = new FrameTasks()
  return {
    schedule: (task) => tasks.add(task),
    flush: () => tasks.run(),
    get pending() {
      return tasks.size
    },
  }
}
