import type { EngineCheckpoint, SessionIndexSnapshot, WindowSnapshot } from './engineCheckpoint.ts'
import type { WindowIndex } from './windowIndex.ts'
import type { WindowLifecycle } from './windowLifecycle.ts'
import { WindowState } from './windowState.ts'

/** Every live window and each index's extra state, for a checkpoint. */
export function captureWindows(indexes: readonly WindowIndex[]): { windows: WindowSnapshot[]; sessions: SessionIndexSnapshot[] } {
  const windows: WindowSnapshot[] = []
  const sessions: SessionIndexSnapshot[] = []
  for (const index of indexes) {
    for (const w of index.windows()) windows.push(w.snapshot())
    const extra = index.snapshot()
    if (extra !== null) sessions.push(extra)
  }
  return { windows, sessions }
}

/** Puts a checkpoint's windows back into their indexes and queues each for its next lifecycle step. */
export function restoreWindows(indexes: readonly WindowIndex[], lifecycle: WindowLifecycle, checkpoint: EngineCheckpoint): void {
  for (const s of checkpoint.windows) {
    const index = indexes.find((i) => i.id === s.window)
    if (index === undefined) throw new Error(`checkpoint holds window spec ${s.window}, which this engine does not have`)
    const w = WindowState.restore(s)
    index.adopt(w)
    lifecycle.adopt(w)
  }
  for (const s of checkpoint.sessions) indexes.find((i) => i.id === s.window)?.restore(s)
}
