/**
 * One engine, several docs: a dashboard binds a doc per device room to one engine, a device may
 * bind its relay room's doc and a doc its tabs share. Each doc has its own sync status, the
 * engine one `syncStatus()` slot, so every doc reports here and the engine receives one fold of
 * all of them, whichever reported last.
 */
import type { ReplicaPort, SyncStatus } from '@tidemark/engine'

/**
 * One doc's place in its engine's sync status: `report` its status and size, `leave` when it
 * is no longer bound.
 *
 * @example
 * const share: StatusShare = engineSyncStatus(engine.replica).share(true)
 * share.report(syncStatusTracker(doc).status(), Y.encodeStateAsUpdate(doc).byteLength)
 * share.leave()
 */
export interface StatusShare {
  /** This doc's current status and encoded size; the engine receives the new fold. */
  report(status: SyncStatus, docBytes: number): void
  /**
   * Removes this doc from the fold. When it was the last, the engine syncs through nothing any
   * more: its status is `local` again, keeping `lastSync`.
   */
  leave(): void
}

/** What one doc reported, and whether it carries the engine's own writes. */
export interface ReportedStatus {
  readonly status: SyncStatus
  /** A writable binding's doc: it carries every local write of the engine. */
  readonly writes: boolean
}

interface Share {
  status: SyncStatus | null
  docBytes: number
  readonly writes: boolean
}

/** Per engine: its docs' shares, and the latest sync any of them reported (kept once every doc left). */
interface Fold {
  readonly shares: Set<Share>
  lastSync: number | null
}

const folds = new WeakMap<ReplicaPort, Fold>()
/** Ports in front of an engine's (a refill's gate): their docs' statuses fold into that engine's. */
const fronts = new WeakMap<ReplicaPort, ReplicaPort>()

/**
 * Makes the docs bound to `front`, a port in front of `engine`'s that forwards to it, share
 * `engine`'s one sync status fold with the docs bound to `engine` directly, rather than keep a
 * fold of their own that would overwrite it.
 *
 * @example
 * foldStatusInto(gate.port, engine.replica)
 */
export function foldStatusInto(front: ReplicaPort, engine: ReplicaPort): void {
  fronts.set(front, fronts.get(engine) ?? engine)
}

/**
 * The sync status fold of the engine behind `port`: every binding of that engine takes a share
 * (`writes`: it publishes the engine's writes), and so does a follower's directory doc.
 *
 * @example
 * const share = engineSyncStatus(engine.replica).share(false)
 */
export function engineSyncStatus(bound: ReplicaPort): { share(writes: boolean): StatusShare } {
  const port = fronts.get(bound) ?? bound
  let fold = folds.get(port)
  if (fold === undefined) {
    fold = { shares: new Set(), lastSync: null }
    folds.set(port, fold)
  }
  const engine = fold
  const all = fold.shares
  const publish = (): void => {
    const reported: ReportedStatus[] = []
    let docBytes = 0
    for (const { status, writes, docBytes: bytes } of all) {
      if (status !== null) reported.push({ status, writes })
      docBytes += bytes
    }
    const folded = foldSyncStatus(reported)
    if (folded === null) return
    if (folded.lastSync !== null && (engine.lastSync === null || folded.lastSync > engine.lastSync)) engine.lastSync = folded.lastSync
    port.setSyncStatus(folded, docBytes)
  }
  return {
    share(writes) {
      const share: Share = { status: null, docBytes: 0, writes }
      all.add(share)
      return {
        report(status, docBytes) {
          if (!all.has(share)) return
          share.status = status
          share.docBytes = docBytes
          publish()
        },
        leave() {
          if (!all.delete(share)) return
          if (all.size > 0) publish()
          else if (share.status !== null) port.setSyncStatus({ state: 'local', lastSync: engine.lastSync, pendingLocalUpdates: 0, peers: 0, refusal: null }, 0)
        },
      }
    },
  }
}

/**
 * Folds several docs' statuses into one (null for none; one is returned as it is).
 *
 * The writable docs carry the same updates (every local write of the engine goes into each), so
 * they are alternatives, folded as one provider's doc is: in sync when any of them is, an update
 * pending while none of them has it (the least pending), the best state otherwise. The read-only
 * docs each carry other replicas' state, so all of them matter: over that writable fold and the
 * read-only docs, `connected` when every one is, `offline` when every one is, `connecting`
 * otherwise; a doc that is `local`, or refused and offline, does not count (`offline` when only
 * refused ones are left, `local` when none is connected to anything). `lastSync` is the latest,
 * `peers` the sum (different docs' awareness cannot tell one client from another), `refusal`
 * the first, in the order the docs were bound.
 *
 * @example
 * foldSyncStatus([{ status: relayRoom, writes: true }, { status: tabs, writes: true }]) // connected when either is
 */
export function foldSyncStatus(reported: readonly ReportedStatus[]): SyncStatus | null {
  if (reported.length <= 1) return reported[0]?.status ?? null
  const writable = reported.filter((r) => r.writes).map((r) => r.status)
  const parts = reported.filter((r) => !r.writes).map((r) => r.status)
  // A read-only doc holds no local write, unless the application wrote into it itself.
  let pending = parts.reduce((sum, s) => sum + s.pendingLocalUpdates, 0)
  if (writable.length > 0) {
    pending += Math.min(...writable.map((s) => s.pendingLocalUpdates))
    parts.unshift(writable.reduce((a, b) => (RANK[b.state] > RANK[a.state] ? b : a)))
  }
  let lastSync: number | null = null
  let peers = 0
  let refusal: string | null = null
  let live = 0
  let connected = 0
  let offline = 0
  for (const status of reported.map((r) => r.status)) {
    if (status.lastSync !== null && (lastSync === null || status.lastSync > lastSync)) lastSync = status.lastSync
    peers += status.peers
    refusal ??= status.refusal
  }
  for (const { state, refusal: refused } of parts) {
    if (state === 'local' || (refused !== null && state === 'offline')) continue
    live++
    if (state === 'connected') connected++
    else if (state === 'offline') offline++
  }
  const state = live === 0 ? (refusal === null ? 'local' : 'offline') : connected === live ? 'connected' : offline === live ? 'offline' : 'connecting'
  return { state, lastSync, pendingLocalUpdates: pending, peers, refusal }
}

/** Which state of alternative docs wins: the one closest to in sync. */
const RANK = { local: 0, offline: 1, connecting: 2, connected: 3 } as const
