/**
 * The engine's listener and replica-port calls given bad input from plain JavaScript (the types
 * forbid it; nothing checked it at run time): each answers with a clear error or an anomaly, the
 * engine keeps serving, and what it accepted stays counted once, live and after replay.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { addToCell, emptyCell, type StreamEvent, type WalOp, tickWhenDue, tumbling } from '../src/index.ts'
import { packCellGroup } from '../src/lattice/cellGroup.ts'
import { TidemarkEngine } from '../src/core/engine.ts'
import { ManualTimers } from '../src/testing/manualTimers.ts'
import { loggedEngine } from './loggedEngine.ts'

const ev = (seq: number): StreamEvent => ({ id: `e${seq}`, source: 'd1', seq, ts: seq * 100, key: 'k', value: seq })
/** What a port call from plain JavaScript can be handed. */
const loose = <T>(value: unknown): T => value as T

/** What `call` threw, or null: the harm a call that should have thrown does is checked before the error is. */
function thrownBy(call: () => unknown): unknown {
  try {
    call()
    return null
  } catch (error) {
    return error
  }
}

/** Errors the engine reported (a listener's), instead of rethrowing them in a microtask. */
function reportedErrors(): unknown[] {
  const reported: unknown[] = []
  vi.stubGlobal('reportError', (error: unknown) => reported.push(error))
  return reported
}

afterEach(() => {
  vi.unstubAllGlobals()
})

describe('replica.reportAnomaly from plain JavaScript', () => {
  it('refuses a reason it does not know with a TypeError: no NaN counter, nothing logged, replay counts the same', () => {
    const { engine, ops } = loggedEngine({ windows: tumbling(1_000), now: () => 0 })
    engine.ingest([ev(1)])
    const thrown = thrownBy(() => engine.replica.reportAnomaly(loose('peer_garbage'), 'from plain JS'))
    expect(engine.stats().anomalies).not.toHaveProperty('peer_garbage')
    // A real log (@tidemark/idb) cannot encode an unknown reason: the failed write blocked every batch until a checkpoint.
    expect(ops.filter((op) => op.kind === 'refuse')).toEqual([])
    expect(thrown).toEqual(new TypeError("reportAnomaly: unknown reason peer_garbage"))
    engine.replica.reportAnomaly('source_conflict', 'two writers')
    expect(engine.ingest([ev(2)]).accepted).toBe(1)
    const replayed = new TidemarkEngine({ windows: tumbling(1_000), now: () => 0 })
    for (const op of ops) replayed.replay(op)
    const { ingested, anomalies } = engine.stats()
    expect(replayed.stats()).toMatchObject({ ingested, anomalies })
    expect(ingested).toBe(2)
  })

  it('a detail that cannot be made text throws before anything is counted, so the log and the live count agree', () => {
    const { engine, ops } = loggedEngine({ windows: tumbling(1_000), now: () => 0 })
    expect(() => engine.replica.reportAnomaly('invalid_remote_cell', loose(Symbol('detail')))).toThrow(TypeError)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(0)
    expect(ops).toEqual([])
  })
})

describe('replica.mergeRemoteGroups with a null group', () => {
  it('is an invalid_remote_cell, logged with the merge; the valid group next to it merges', () => {
    const { engine, ops } = loggedEngine({ windows: tumbling(1_000), now: () => 0 })
    const cell = emptyCell()
    addToCell(cell, 100, 5, 1)
    const valid = packCellGroup('tumbling:1000', 0, 'peer-src', ['k'], [cell])
    const report = engine.replica.mergeRemoteGroups(loose([valid, null]), [])
    expect(report.applied).toBe(1)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(1)
    expect(engine.stats().remoteAnomalies).toEqual(['invalid_remote_cell: cell group: not a cell group'])
    const replayed = new TidemarkEngine({ windows: tumbling(1_000), now: () => 0 })
    for (const op of ops) replayed.replay(op as WalOp)
    expect(replayed.stats().anomalies.invalid_remote_cell).toBe(1)
    expect(replayed.results().map((r) => r.sum)).toEqual([5])
  })
})

describe('replica.mergeRemote / mergeRemoteGroups given something that is not an array', () => {
  it('is a TypeError naming the call, before anything is counted: the live count and the log agree', () => {
    const { engine, ops } = loggedEngine({ windows: tumbling(1_000), now: () => 0 })
    const thrown = thrownBy(() => engine.replica.mergeRemote(loose([{ address: null, cell: null }]), loose(null)))
    const replayed = new TidemarkEngine({ windows: tumbling(1_000), now: () => 0 })
    for (const op of ops) replayed.replay(op)
    expect(engine.stats().anomalies.invalid_remote_cell).toBe(replayed.stats().anomalies.invalid_remote_cell)
    expect(thrown).toEqual(new TypeError('mergeRemote needs arrays of cells and clocks'))
    expect(() => engine.replica.mergeRemoteGroups(loose(null), [])).toThrow(new TypeError('mergeRemoteGroups needs arrays of cells and clocks'))
    expect(engine.ingest([ev(1)]).accepted).toBe(1)
  })
})

describe('listeners that are not functions, or throw', () => {
  it('onLocalWrite: a non-function is a TypeError at once; later batches are applied and acknowledged', () => {
    const engine = new TidemarkEngine({ windows: tumbling(1_000), now: () => 0 })
    const thrown = thrownBy(() => engine.replica.onLocalWrite(loose(null)))
    expect(engine.ingest([ev(1)]).accepted).toBe(1)
    expect(thrown).toEqual(new TypeError('onLocalWrite needs a function, got null'))
  })

  it('onLocalWrite: a listener that throws is reported; the batch is acknowledged, the other transports get the write, subscribers hear it', () => {
    const reported = reportedErrors()
    const engine = new TidemarkEngine({ windows: tumbling(1_000), now: () => 0 })
    engine.replica.onLocalWrite(() => {
      throw new Error('transport down')
    })
    const second: number[] = []
    engine.replica.onLocalWrite((write) => second.push(write.cells.length))
    const heard: number[] = []
    engine.subscribe((changes) => heard.push(changes.length))
    const receipt = engine.ingest([ev(1)])
    expect(receipt.accepted).toBe(1)
    expect(second).toEqual([1])
    expect(heard).toEqual([1])
    expect(reported).toEqual([new Error('transport down')])
  })

  it('onClose: a non-function is a TypeError at once; close() resolves and every close listener (tickWhenDue) runs', async () => {
    const timers = new ManualTimers()
    const engine = new TidemarkEngine({ windows: tumbling(1_000), idleTimeout: 5_000, now: timers.read })
    const thrown = thrownBy(() => engine.replica.onClose(loose('stop')))
    const stop = vi.fn()
    engine.replica.onClose(stop)
    await expect(engine.close()).resolves.toBeUndefined()
    expect(stop).toHaveBeenCalledTimes(1)
    expect(thrown).toEqual(new TypeError('onClose needs a function, got stop'))
  })

  it('onClose: a listener that throws is reported; the listeners after it run, so tickWhenDue stops ticking a closed engine', async () => {
    const reported = reportedErrors()
    const timers = new ManualTimers()
    const engine = new TidemarkEngine({ windows: tumbling(1_000), idleTimeout: 5_000, now: timers.read })
    engine.replica.onClose(() => {
      throw new Error('provider already destroyed')
    })
    tickWhenDue(engine, { now: timers.read, timers })
    engine.ingest([ev(1)])
    await expect(engine.close()).resolves.toBeUndefined()
    expect(reported).toEqual([new Error('provider already destroyed')])
    // A tick armed before the close would throw 'engine is closed' out of its timer.
    expect(() => timers.advance(10_000)).not.toThrow()
  })

  it('subscribe: a non-function is a TypeError at once, not an error thrown after every later batch', () => {
    const reported = reportedErrors()
    const engine = new TidemarkEngine({ windows: tumbling(1_000), now: () => 0 })
    const thrown = thrownBy(() => engine.subscribe(loose(undefined)))
    expect(engine.ingest([ev(1)]).accepted).toBe(1)
    expect(reported).toEqual([])
    expect(thrown).toEqual(new TypeError('subscribe needs a function, got undefined'))
  })
})

describe('replica status reports from plain JavaScript', () => {
  const connected = { state: 'connected', lastSync: 5, pendingLocalUpdates: 0, peers: 1, refusal: null } as const

  it.each([
    ['null', null, 10, 'setSyncStatus: needs a SyncStatus, got null'],
    ['an unknown state', { ...connected, state: 'syncing' }, 10, 'setSyncStatus: invalid state syncing'],
    ['a NaN lastSync', { ...connected, lastSync: Number.NaN }, 10, 'setSyncStatus: invalid lastSync NaN'],
    ['a fractional peer count', { ...connected, peers: 1.5 }, 10, 'setSyncStatus: invalid peers 1.5'],
    ['a negative pending count', { ...connected, pendingLocalUpdates: -1 }, 10, 'setSyncStatus: invalid pendingLocalUpdates -1'],
    ['a refusal that is not text', { ...connected, refusal: 7 }, 10, 'setSyncStatus: invalid refusal 7'],
    ['docBytes undefined', connected, undefined, 'setSyncStatus: invalid docBytes undefined'],
  ])('setSyncStatus with %s throws a TypeError and keeps the status it had', (_, status, docBytes, message) => {
    const engine = new TidemarkEngine({ windows: tumbling(1_000), now: () => 0 })
    engine.replica.setSyncStatus(connected, 64)
    expect(thrownBy(() => engine.replica.setSyncStatus(loose(status), loose(docBytes)))).toEqual(new TypeError(message))
    expect(engine.syncStatus()).toEqual(connected)
    expect(engine.stats().docBytes).toBe(64)
  })

  it('reportError with something that is not an Error throws a TypeError; the last error stays', () => {
    const engine = new TidemarkEngine({ windows: tumbling(1_000), now: () => 0 })
    engine.replica.reportError(new Error('peer r2 runs tumbling:30000'))
    expect(thrownBy(() => engine.replica.reportError(loose(null)))).toEqual(new TypeError('reportError needs an Error, got null'))
    expect(thrownBy(() => engine.replica.reportError(loose('text')))).toEqual(new TypeError('reportError needs an Error, got text'))
    expect(engine.stats().replicationError).toBe('peer r2 runs tumbling:30000')
    // An error of another realm (a worker's, a frame's) is an Error by its shape.
    engine.replica.reportError(loose({ name: 'Error', message: 'from a frame' }))
    expect(engine.stats().replicationError).toBe('from a frame')
  })

  it('exportDurableState without a function throws a TypeError naming the call, before anything is held', () => {
    const engine = new TidemarkEngine({ windows: tumbling(1_000), now: () => 0 })
    engine.ingest([ev(1)])
    expect(thrownBy(() => engine.replica.exportDurableState(loose(null)))).toEqual(new TypeError('exportDurableState needs a function, got null'))
    const delivered: number[] = []
    engine.replica.exportDurableState((state) => delivered.push(state.cells.length))
    expect(delivered).toEqual([1])
  })

  it.each([
    ['null options', null, 'got null'],
    ['a writer that is not text', { writer: 7 }, 'got writer 7'],
    ['an empty writer', { writer: '' }, "got writer ''"],
  ])('exportState and exportDurableState with %s throw a TypeError naming the call, and deliver nothing', (_, options, message) => {
    const engine = new TidemarkEngine({ windows: tumbling(1_000), now: () => 0 })
    engine.ingest([ev(1)])
    expect(thrownBy(() => engine.replica.exportState(loose(options)))).toEqual(new TypeError(`exportState needs options { writer?: a replica id }, ${message}`))
    const delivered: number[] = []
    expect(thrownBy(() => engine.replica.exportDurableState((state) => delivered.push(state.cells.length), loose(options)))).toEqual(new TypeError(`exportDurableState needs options { writer?: a replica id }, ${message}`))
    expect(delivered).toEqual([])
    engine.replica.exportDurableState((state) => delivered.push(state.cells.length), { writer: engine.replica.replicaId })
    expect(delivered).toEqual([1])
  })
})
