/**
 * One engine, several docs: a dashboard binds a doc per device room to one engine, and each doc
 * has its own sync status. The engine has one `syncStatus()` slot, so every doc reports here
 * and the engine receives one fold of all of them, whichever reported last.
 */
import type { ReplicaPort, SyncStatus } from '@tidemark/engine'

/**
 * One doc's place in its engine's sync status: `report` its status and size, `leave` when it
 * is no longer bound.
 *
 * @example
 * const share: StatusShare = engineSyncStatus(engine.replica).share()
 * share.report(syncStatusTracker(doc).status(), Y.encodeStateAsUpdate(doc).byteLength)
 * share.leave()
 */
export interface StatusShare {
  /** This doc's current status and encoded size; the engine receives the new fold. */
  report(status: SyncStatus, docBytes: number): void
  /** Removes this doc from the fold (the engine keeps the last status reported when it was the only one). */
  leave(): void
}

interface Reported {
  status: SyncStatus | null
  docBytes: number
}

const folds = new WeakMap<ReplicaPort, Map<object, Reported>>()

/**
 * The sync status fold of the engine behind `port`: every binding of that engine (and a
 * follower's directory doc) takes a share.
 *
 * @example
 * const share = engineSyncStatus(engine.replica).share()
 */
export function engineSyncStatus(port: ReplicaPort): { share(): StatusShare } {
  let shares = folds.get(port)
  if (shares === undefined) {
    shares = new Map()
    folds.set(port, shares)
  }
  const all = shares
  const publish = (): void => {
    const statuses: SyncStatus[] = []
    let docBytes = 0
    for (const reported of all.values()) {
      if (reported.status !== null) statuses.push(reported.status)
      docBytes += reported.docBytes
    }
    const folded = foldSyncStatus(statuses)
    if (folded !== null) port.setSyncStatus(folded, docBytes)
  }
  return {
    share() {
      const key = {}
      const reported: Reported = { status: null, docBytes: 0 }
      all.set(key, reported)
      return {
        report(status, docBytes) {
          if (!all.has(key)) return
          reported.status = status
          reported.docBytes = docBytes
          publish()
        },
        leave() {
          if (!all.delete(key)) return
          if (all.size > 0) publish()
        },
      }
    },
  }
}

/**
 * Folds several docs' statuses into one (null for none; one status is returned as it is):
 * - `state`: over the docs that are not `local` and not refused-and-offline, `connected` when
 *   all of them are, `offline` when all of them are, `connecting` otherwise; `offline` when only
 *   refused docs are left, `local` when none is connected to anything;
 * - `lastSync`: the latest; `pendingLocalUpdates` and `peers`: summed (different docs carry
 *   different updates; their awareness instances cannot tell one client from another);
 * - `refusal`: the first doc's refusal, in the order the docs were bound.
 *
 * @example
 * foldSyncStatus([deviceRoom, directory]) // { state: 'connected', ... } when both are in sync
 */
export function foldSyncStatus(statuses: readonly SyncStatus[]): SyncStatus | null {
  if (statuses.length <= 1) return statuses[0] ?? null
  let lastSync: number | null = null
  let pending = 0
  let peers = 0
  let refusal: string | null = null
  let live = 0
  let connected = 0
  let offline = 0
  for (const status of statuses) {
    if (status.lastSync !== null && (lastSync === null || status.lastSync > lastSync)) lastSync = status.lastSync
    pending += status.pendingLocalUpdates
    peers += status.peers
    refusal ??= status.refusal
    if (status.state === 'local' || (status.refusal !== null && status.state === 'offline')) continue
    live++
    if (status.state === 'connected') connected++
    else if (status.state === 'offline') offline++
  }
  const state = live === 0 ? (refusal === null ? 'local' : 'offline') : connected === live ? 'connected' : offline === live ? 'offline' : 'connecting'
  return { state, lastSync, pendingLocalUpdates: pending, peers, refusal }
}
