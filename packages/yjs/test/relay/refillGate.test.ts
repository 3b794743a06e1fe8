/**
 * `RefillGate` on its own (what `followRooms` puts in front of its engine): two device engines'
 * states handed to a fresh dashboard engine as the binding of each room would hand them
 * (`mergeRemote` on the port), with the rooms' sync status set by hand and the timers on a fake
 * clock.
 */
import { boundedOutOfOrderness, createEngine, type Engine, type SyncStatus, tumbling } from '@tidemark/engine'
import { describe, expect, it } from 'vitest'
import { RefillGate } from '../../src/relay/refillGate.ts'

const options = { windows: tumbling(1_000), watermark: boundedOutOfOrderness(0), allowedLateness: 2_000 }

/** A device engine that took one reading a second from `source`, 0 s to 9 s. */
function device(source: string): Engine {
  const engine = createEngine(options)
  engine.ingest(Array.from({ length: 10 }, (_, i) => ({ id: `${source}-${i + 1}`, source, seq: i + 1, ts: i * 1_000 + 500, key: 'temp', value: 20 })))
  return engine
}

const status = (state: SyncStatus['state']): SyncStatus => ({ state, lastSync: state === 'connected' ? 1 : null, pendingLocalUpdates: 0, peers: 0, refusal: null })

/**
 * A fresh dashboard engine behind a gate, two rooms followed, and a clock and timers the test
 * moves: the timers run on `clock.now`, the gate reads `clock.now + clock.jumped` (a host's wall
 * clock that jumps while its timers do not).
 */
function gated() {
  const clock = { now: 0, jumped: 0 }
  const timers: { at: number; run: () => void }[] = []
  const dashboard = createEngine(options)
  const gate = new RefillGate(dashboard.replica, {
    now: () => clock.now + clock.jumped,
    timers: { setTimeout: (run, ms) => timers.push({ at: clock.now + ms, run }), clearTimeout: () => timers.splice(0) },
  })
  const rooms = new Map<string, SyncStatus>([
    ['fleet/d01', status('connecting')],
    ['fleet/d02', status('connecting')],
  ])
  gate.listen(
    () => rooms,
    () => true,
  )
  /** A room's state arrives (its binding merges it), then its status turns `connected`. */
  const land = (room: string, engine: Engine): void => {
    const { cells, clocks } = engine.replica.exportState()
    gate.port.mergeRemote(cells, clocks)
    rooms.set(room, status('connected'))
    gate.check()
  }
  const advance = (ms: number): void => {
    clock.now += ms
    const due = timers.filter((timer) => timer.at <= clock.now)
    timers.splice(0, timers.length, ...timers.filter((timer) => timer.at > clock.now))
    for (const timer of due) timer.run()
  }
  return { dashboard, gate, rooms, clock, land, advance }
}

describe('RefillGate', () => {
  it('merged one room at a time, the first room makes windows final that the second then changes', () => {
    const dashboard = createEngine(options)
    for (const engine of [device('d01'), device('d02')]) {
      const { cells, clocks } = engine.replica.exportState()
      dashboard.replica.mergeRemote(cells, clocks)
    }
    expect(dashboard.stats().finalityViolations).toBeGreaterThan(0)
  })

  it('holds every merge until each room synced, then hands them to the engine in one merge: nothing fires on part of the fleet', () => {
    const { dashboard, gate, land } = gated()
    // Window changes per notification (a status report notifies too, with none).
    const notifications: number[] = []
    dashboard.subscribe((changes) => {
      if (changes.length > 0) notifications.push(changes.length)
    })
    land('fleet/d01', device('d01'))
    expect(dashboard.stats().sources).toBe(0)
    expect(gate.report()).toEqual({ state: 'waiting', rooms: 2, synced: 1, missing: [], tookMs: null })
    land('fleet/d02', device('d02'))
    expect(gate.report()).toEqual({ state: 'merged', rooms: 2, synced: 2, missing: [], tookMs: 0 })
    expect(notifications).toHaveLength(1)
    expect(dashboard.stats()).toMatchObject({ sources: 2, finalityViolations: 0, corrections: 0 })
    expect(dashboard.results({ key: 'temp' }).every((r) => r.count === 2)).toBe(true)
    // Open: later merges go straight through.
    const late = createEngine(options)
    late.ingest([{ id: 'd03-1', source: 'd03', seq: 1, ts: 9_700, key: 'temp', value: 20 }])
    const { cells, clocks } = late.replica.exportState()
    gate.port.mergeRemote(cells, clocks)
    expect(dashboard.stats().sources).toBe(3)
  })

  it('a room that never syncs: the gate opens with what it holds once the bound ran out, naming the room', () => {
    const { dashboard, gate, land, advance } = gated()
    land('fleet/d01', device('d01'))
    advance(9_999)
    expect(gate.report().state).toBe('waiting')
    advance(1)
    expect(gate.report()).toEqual({ state: 'timedOut', rooms: 2, synced: 1, missing: ['fleet/d02'], tookMs: 10_000 })
    expect(dashboard.stats().sources).toBe(1)
  })

  it('an empty directory opens the gate at once; a refused room is not waited for', () => {
    const empty = createEngine(options)
    const gate = new RefillGate(empty.replica, { now: () => 0, timers: { setTimeout: () => 0, clearTimeout: () => {} } })
    let listed = false
    gate.listen(
      () => new Map(),
      () => listed,
    )
    // Not read yet: nothing to tell an empty directory from one that did not arrive.
    expect(gate.report().state).toBe('waiting')
    listed = true
    gate.check()
    expect(gate.report()).toMatchObject({ state: 'merged', rooms: 0 })

    const { gate: refusing, rooms, land } = gated()
    rooms.set('fleet/d02', { ...status('offline'), refusal: 'tidemark:forbidden' })
    land('fleet/d01', device('d01'))
    expect(refusing.report()).toMatchObject({ state: 'merged', rooms: 2, synced: 2 })
  })

  it('the bound is the timers\' 10 s, whatever the host\'s clock does meanwhile: a jump back does not keep the gate shut, a jump ahead does not open it early', () => {
    const back = gated()
    back.land('fleet/d01', device('d01'))
    back.clock.jumped = -3_600_000
    back.advance(10_000)
    expect(back.gate.report()).toMatchObject({ state: 'timedOut', missing: ['fleet/d02'] })
    expect(back.dashboard.stats().sources).toBe(1)

    const ahead = gated()
    ahead.land('fleet/d01', device('d01'))
    ahead.clock.jumped = 3_600_000
    ahead.gate.port.setSyncStatus(status('connecting'), 0)
    expect(ahead.gate.report().state).toBe('waiting')
    ahead.land('fleet/d02', device('d02'))
    expect(ahead.gate.report()).toMatchObject({ state: 'merged', synced: 2 })
    expect(ahead.dashboard.stats().finalityViolations).toBe(0)
  })

  it('a bound that ran out before any room synced (the relay restarting) holds the rooms that land after it together', () => {
    const { dashboard, gate, land, advance } = gated()
    advance(10_000)
    land('fleet/d01', device('d01'))
    advance(300)
    land('fleet/d02', device('d02'))
    expect(dashboard.stats()).toMatchObject({ sources: 2, finalityViolations: 0, corrections: 0 })
    expect(gate.report()).toMatchObject({ state: 'merged', rooms: 2, synced: 2, missing: [] })
  })

  it('a bound that ran out before any room synced runs again from the first room to sync: a room that never syncs stalls nothing for good', () => {
    const { dashboard, gate, land, advance } = gated()
    advance(10_000)
    land('fleet/d01', device('d01'))
    advance(9_999)
    expect(gate.report().state).toBe('waiting')
    advance(1)
    expect(gate.report()).toMatchObject({ state: 'timedOut', missing: ['fleet/d02'] })
    expect(dashboard.stats().sources).toBe(1)
  })
})
