/**
 * bench/README.md, "Profiles": merge-8-replicas, aggregates-cost and reload-100k, whose preparation
 * (8 writer replicas bound to Yjs docs, twice with sketches; an engine of 100k cells bound to its
 * doc) takes seconds: what they join, which contenders they run and what they report. Nothing is
 * timed.
 */
import { describe, expect, it } from 'vitest'
import * as aggregatesCost from '../aggregates-cost.ts'
import { NO_PROBE } from '../harness/memory.ts'
import * as merge8Replicas from '../merge-8-replicas.ts'
import * as reload100k from '../reload-100k.ts'
import * as sliding1h1m from '../sliding-1h-1m.ts'
import * as streaming100k from '../streaming-100k.ts'
import { contender, names, seenBy, windowIds } from './recordingEngine.ts'

describe('bench/README.md, the profiles table: the joins', { timeout: 60_000 }, () => {
  it('merge-8-replicas: 8 writers × 10k live cells; the engine alone (per writer, in one call), through Yjs (per writer, one update), with a write-ahead log, bound to a doc that holds the state, Yjs alone, a plain-loop floor; ms per merge, bytes per cell', () => {
    const definition = merge8Replicas.define()
    expect({ cells: definition.events, writers: definition.batches }).toEqual({ cells: 80_000, writers: 8 })
    expect(names(definition)).toEqual(['tidemark', 'tidemark-one-call', 'through-yjs', 'through-yjs-one-update', 'through-yjs-one-update-logged', 'bind-loaded-doc', 'yjs-decode', 'plain-loop'])
    expect(definition.timeTarget).toEqual({ contender: 'through-yjs-one-update', maxMs: 50 })
    expect(definition.showTimes).toBe(true)
    expect(definition.showGauges).toEqual(['bytesPerCell'])
    const logged = contender(definition, 'through-yjs-one-update-logged').run({ probe: NO_PROBE, record: false })
    expect(logged.end.walBytes).toBeGreaterThan(0)
    expect(logged.end.cells).toBe(80_000)
    logged.close?.()
    // Bound after the load, first contact merges all 8 writers' logs: every window of every key.
    const loaded = contender(definition, 'bind-loaded-doc').run({ probe: NO_PROBE, record: true })
    expect({ cells: loaded.end.cells, windows: loaded.end.liveWindows, totals: loaded.totals?.size }).toEqual({ cells: 80_000, windows: 10_000, totals: 10_000 })
    loaded.close?.()
    expect(definition.ratios.find((r) => r.name === 'loaded/join')).toMatchObject({ subject: 'bind-loaded-doc', reference: 'through-yjs-one-update', format: 'percent' })
    expect(definition.agree).toContainEqual(['bind-loaded-doc', 'plain-loop'])
  })

  it("aggregates-cost: streaming-100k's ingest and sliding-1h-1m's with and without the sketches (target ≥ 50%), the one-update join with and without them", () => {
    const definition = aggregatesCost.define()
    expect(names(definition)).toEqual(['tidemark', 'tidemark-sketched', 'fleet', 'fleet-sketched', 'sliding', 'sliding-sketched', 'join-plain', 'join-sketched'])
    expect(definition.ratios.find((r) => r.name === 'sketched/plain')).toMatchObject({ subject: 'tidemark-sketched', reference: 'tidemark', target: 0.5 })
    const streaming100kSeen = seenBy(contender(streaming100k.define()), { batchesOnly: true })
    const slidingSeen1h = seenBy(contender(sliding1h1m.define()), { batchesOnly: true })
    const plain = seenBy(contender(definition), { batchesOnly: true })
    const sketched = seenBy(contender(definition, 'tidemark-sketched'), { batchesOnly: true })
    expect(plain.batches).toEqual(streaming100kSeen.batches)
    expect(sketched.batches).toEqual(plain.batches)
    expect(windowIds(plain)).toEqual(windowIds(streaming100kSeen))
    expect(plain.options.aggregates).toBeUndefined()
    expect(sketched.options.aggregates).toBe(aggregatesCost.SKETCHES)
    const slidingSeen = seenBy(contender(definition, 'sliding'), { batchesOnly: true })
    expect(slidingSeen.batches).toEqual(slidingSeen1h.batches)
    expect(windowIds(slidingSeen)).toEqual(windowIds(slidingSeen1h))
    expect(definition.showGauges).toEqual(['bytesPerCell', 'bytesPerCellSketched'])
  })


  it('reload-100k: a restored engine binds its persisted doc, against an empty doc and against restoring and loading alone; the bytes the bind writes', () => {
    const definition = reload100k.define()
    expect({ cells: definition.events, batches: definition.batches }).toEqual({ cells: 100_000, batches: 1 })
    expect(names(definition)).toEqual(['reload', 'fresh-doc', 'restore-load'])
    expect(definition.showGauges).toEqual(['bytesWritten'])
    const floor = contender(definition, 'restore-load').run({ probe: NO_PROBE, record: true })
    const reload = contender(definition, 'reload').run({ probe: NO_PROBE, record: true })
    const fresh = contender(definition, 'fresh-doc').run({ probe: NO_PROBE, record: true })
    // Every window of every key, one reading per cell; the floor binds nothing and writes nothing.
    expect({ cells: floor.end.cells, windows: floor.end.liveWindows, totals: floor.totals?.size, written: floor.end.bytesWritten }).toEqual({ cells: 100_000, windows: 1000, totals: 1000, written: 0 })
    expect([...(reload.totals ?? [])]).toEqual([...(floor.totals ?? [])])
    expect([...(fresh.totals ?? [])]).toEqual([...(floor.totals ?? [])])
    // The reload writes the whole state again in its new session's entries: about what a first bind writes.
    expect(reload.end.bytesWritten).toBeGreaterThan(0.9 * (fresh.end.bytesWritten as number))
    for (const run of [floor, reload, fresh]) run.close?.()
    expect(definition.ratios.map((r) => [r.name, r.subject, r.reference])).toEqual([
      ['reload/fresh', 'reload', 'fresh-doc'],
      ['reload/floor', 'reload', 'restore-load'],
    ])
    expect(definition.agree).toEqual([
      ['reload', 'restore-load'],
      ['fresh-doc', 'restore-load'],
    ])
  })

})
