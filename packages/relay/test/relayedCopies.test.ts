/** Copies of the other relays' updates, on a store of this relay alone: kept ten write windows, then queued merged per room. */
import { ManualTimers } from '@tidemark/engine/testing'
import { expect, it } from 'vitest'
import * as Y from 'yjs'
import { MAX_TIMER_MS } from '../src/relayOptions.ts'
import { copiesWindowMs, RelayedCopies } from '../src/store/relayedCopies.ts'

function copies(): { readonly copies: RelayedCopies; readonly timers: ManualTimers; readonly queued: [string, Uint8Array][]; readonly logged: string[] } {
  const timers = new ManualTimers(0)
  const queued: [string, Uint8Array][] = []
  const logged: string[] = []
  const kept = new RelayedCopies((room, update) => queued.push([room, update]), copiesWindowMs(500), timers, (level, message) => logged.push(`${level}: ${message}`))
  return { copies: kept, timers, queued, logged }
}

/** The updates a document makes, one per reading pushed. */
function readings(values: readonly number[]): Uint8Array[] {
  const doc = new Y.Doc()
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  for (const value of values) doc.getArray<number>('readings').push([value])
  return updates
}

function applied(updates: readonly Uint8Array[]): number[] {
  const doc = new Y.Doc()
  for (const update of updates) Y.applyUpdate(doc, update)
  return doc.getArray<number>('readings').toArray()
}

it('waits ten write windows, at most the longest timer', () => {
  expect(copiesWindowMs(500)).toBe(5_000)
  expect(copiesWindowMs(20)).toBe(200)
  expect(copiesWindowMs(MAX_TIMER_MS)).toBe(MAX_TIMER_MS)
})

it('copies wait the window from the first, then each room is queued as one update that holds all of its copies', () => {
  const { copies: kept, timers, queued } = copies()
  const a = readings([1, 2, 3])
  const b = readings([7])
  kept.add('fleet-a/d1', a[0] as Uint8Array)
  timers.advance(4_000)
  kept.add('fleet-a/d2', b[0] as Uint8Array)
  kept.add('fleet-a/d1', a[1] as Uint8Array)
  kept.add('fleet-a/d1', a[2] as Uint8Array)
  expect(kept.has('fleet-a/d1')).toBe(true)
  expect(kept.of('fleet-a/d1')).toHaveLength(3)
  expect(kept.bytes).toBe([...a, ...b].reduce((n, update) => n + update.byteLength, 0))
  timers.advance(999)
  expect(queued).toEqual([])
  timers.advance(1)
  expect(queued.map(([room]) => room)).toEqual(['fleet-a/d1', 'fleet-a/d2'])
  expect(applied([(queued[0] as [string, Uint8Array])[1]])).toEqual([1, 2, 3])
  // A room's only copy goes as it is.
  expect((queued[1] as [string, Uint8Array])[1]).toBe(b[0])
  expect(kept.bytes).toBe(0)
  expect(kept.has('fleet-a/d1')).toBe(false)
  // The next copy starts a window of its own.
  kept.add('fleet-a/d2', readings([8])[0] as Uint8Array)
  timers.advance(4_999)
  expect(queued).toHaveLength(2)
  timers.advance(1)
  expect(queued).toHaveLength(3)
})

it('release queues what waits at once; once stopped, no timer is armed', () => {
  const { copies: kept, timers, queued } = copies()
  kept.add('fleet-a/d1', readings([1])[0] as Uint8Array)
  kept.release()
  expect(queued).toHaveLength(1)
  expect(timers.pending).toEqual([])
  kept.stop()
  kept.add('fleet-a/d1', readings([2])[0] as Uint8Array)
  expect(timers.pending).toEqual([])
  kept.release()
  expect(queued).toHaveLength(2)
})

it('copies Yjs cannot merge are queued one by one, and the failure is logged', () => {
  const { copies: kept, queued, logged } = copies()
  const torn = Uint8Array.of(200)
  const update = readings([1])[0] as Uint8Array
  kept.add('fleet-a/d1', update)
  kept.add('fleet-a/d1', torn)
  kept.release()
  expect(queued).toEqual([
    ['fleet-a/d1', update],
    ['fleet-a/d1', torn],
  ])
  expect(logged).toEqual([expect.stringMatching(/^warn: merging 2 copies of fleet-a\/d1 failed, queued one by one: /)])
})
