import type { HostMode } from '../protocol/messages.ts'

/**
 * Why a page fails when its host says another host took the log (`refused` with `deposed`), or
 * null when the page should go to the next host (a takeover). Failing instead of taking the log
 * back: in single mode (neither SharedWorker nor Web Locks keep two tabs apart), starting this
 * tab's host again would take the log back, and the two would fence each other for ever; in
 * shared mode without Web Locks, another build's SharedWorker (a deploy) took it, and nothing
 * makes it wait.
 *
 * @example
 * deposedFailure('another host took the log', 'shared', false) // '…reload this page'
 * deposedFailure('another host took the log', 'leader', true) // null: a takeover
 */
export function deposedFailure(reason: string, mode: HostMode, hasLocks: boolean): string | null {
  if (mode === 'single') {
    return `${reason}: single mode serves one tab (this browser offers neither SharedWorker nor Web Locks here), and another tab of this app took the engine's log; close the other tabs and reload this one`
  }
  if (mode === 'shared' && !hasLocks) {
    return `${reason}: without Web Locks (a page on plain http from a LAN address), the SharedWorkers of two builds of this app cannot share the engine's log, and the other one took it; reload this page`
  }
  return null
}
