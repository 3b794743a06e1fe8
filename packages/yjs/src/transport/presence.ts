/**
 * Awareness details that decide whether peers see each other (the `peers` of sync status).
 *
 * y-protocols applies a remote awareness state only when its clock is newer than the one
 * it remembers. Two consequences the providers work around:
 * - a fresh `Awareness` sits at clock 0, which no peer applies, until its 15 s renewal;
 * - after a disconnect the peers' states are removed but their clocks remembered, so the
 *   same states re-sent on reconnect are ignored.
 */
import type { Awareness } from 'y-protocols/awareness'

/** Re-sets the local state, raising its clock; the awareness 'update' event sends it. */
export function announcePresence(awareness: Awareness): void {
  awareness.setLocalState(awareness.getLocalState() ?? {})
}

/** Forgets the clocks of peers whose states were removed, so their states apply again on reconnect. */
export function forgetAbsentPeers(awareness: Awareness): void {
  for (const client of [...awareness.meta.keys()]) {
    if (client !== awareness.clientID && !awareness.states.has(client)) awareness.meta.delete(client)
  }
}
