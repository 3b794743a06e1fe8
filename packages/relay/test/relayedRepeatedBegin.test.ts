/**
 * A relay's publishes can reach Redis twice: its client resends, after a reconnection, the
 * commands it wrote and got no answer for, which Redis may have run already. A `begin` seen a
 * second time must not label the changes that came after its first delivery: they were queued
 * for a later write of their relay, and the `stored` of this one does not cover them.
 */
import { expect, it } from 'vitest'
import { RelayMetrics } from '../src/metrics/relayMetrics.ts'
import { RelayedUpdates } from '../src/store/relayedUpdates.ts'
import { ManualTimers } from './support/guardedSockets.ts'

const RELAY = 'tidemark-relay-41-x1'

function held(): { relayed: RelayedUpdates; written: Uint8Array[]; timers: ManualTimers } {
  const timers = new ManualTimers()
  const written: Uint8Array[] = []
  const relayed = new RelayedUpdates({ append: (_room, update) => written.push(update) }, { holdMs: 5_000, now: () => timers.now, timers, metrics: new RelayMetrics() })
  return { relayed, written, timers }
}

it('a begin delivered again (the publisher resent it after a reconnection) does not label the changes that came after it first', () => {
  const { relayed, written, timers } = held()
  const first = Uint8Array.of(1)
  const second = Uint8Array.of(2)
  relayed.hold('fleet-a/d1', first, RELAY)
  relayed.begun(RELAY, 5)
  // Published after `begin 5`: queued for write 6.
  relayed.hold('fleet-a/d1', second, RELAY)
  // The resent pipeline: `begin 5` again (the change it also carried is no update here any more).
  relayed.begun(RELAY, 5)
  relayed.stored(RELAY, 5)
  expect(relayed.bytes).toBe(1)
  // Write 6 never comes (the relay died): the second change is written here.
  timers.advance(5_000)
  expect(written).toEqual([second])
})

it('a begin delivered again after everything its relay sent was confirmed does not label what came after it first', () => {
  const { relayed, written, timers } = held()
  const first = Uint8Array.of(1)
  const second = Uint8Array.of(2)
  relayed.hold('fleet-a/d1', first, RELAY)
  relayed.begun(RELAY, 5)
  relayed.stored(RELAY, 5)
  expect(relayed.bytes).toBe(0)
  relayed.hold('fleet-a/d1', second, RELAY)
  relayed.begun(RELAY, 5)
  relayed.stored(RELAY, 5)
  timers.advance(5_000)
  expect(written).toEqual([second])
})
