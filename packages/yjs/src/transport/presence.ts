/**
 * Awareness details that decide whether peers see each other (the `peers` of sync status).
 *
 * y-protocols applies a remote awareness state only when its clock is newer than the one
 * it remembers. Two consequences the providers work around:
 * - a fresh `Awareness` sits at clock 0, which no peer applies, until its 15 s renewal;
 * - after a disconnect the peers' states are removed but their clocks remembered, so the
 *   same states re-sent on reconnect are ignored.
 */
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
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

/** One entry of an awareness update: a client's state (as JSON text, `'null'` for a removal) at its clock. */
export interface AwarenessEntry {
  readonly client: number
  readonly clock: number
  readonly state: string
}

/**
 * The entries of an awareness update, in order.
 *
 * @example
 * awarenessEntries(encodeAwarenessUpdate(awareness, [awareness.clientID])) // [{ client: 12, clock: 3, state: '{"name":"d1"}' }]
 */
export function awarenessEntries(update: Uint8Array): AwarenessEntry[] {
  const decoder = decoding.createDecoder(update)
  const entries: AwarenessEntry[] = []
  const n = decoding.readVarUint(decoder)
  for (let i = 0; i < n; i++) entries.push({ client: decoding.readVarUint(decoder), clock: decoding.readVarUint(decoder), state: decoding.readVarString(decoder) })
  return entries
}

/**
 * An awareness update of `entries`.
 *
 * @example
 * awarenessUpdate(awarenessEntries(update).filter((entry) => entry.client !== 12))
 */
export function awarenessUpdate(entries: readonly AwarenessEntry[]): Uint8Array {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, entries.length)
  for (const { client, clock, state } of entries) {
    encoding.writeVarUint(encoder, client)
    encoding.writeVarUint(encoder, clock)
    encoding.writeVarString(encoder, state)
  }
  return encoding.toUint8Array(encoder)
}
