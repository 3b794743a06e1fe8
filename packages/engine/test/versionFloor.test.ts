/**
 * `engine.raiseVersionFloor(floor)`: what a recovery that lost log records calls, so that this
 * replica's later writes outrank every version of its sources it wrote before the loss.
 */
import { describe, expect, it } from 'vitest'
import { type ClockEntry, createEngine, manual, type StreamEvent, TidemarkEngine, tumbling } from '../src/index.ts'

const at = (source: string, seq: number, ts = seq, value = 1): StreamEvent => ({ id: `${source}-${seq}`, source, seq, ts, value })
const options = { windows: tumbling(10), watermark: manual(), replicaId: 'a' }

function versions(engine: TidemarkEngine): { clocks: Record<string, number>; cells: Record<string, number> } {
  const { cells, clocks } = engine.replica.exportState()
  return {
    clocks: Object.fromEntries(clocks.map((clock) => [clock.source, clock.version])),
    cells: Object.fromEntries(cells.map(({ address, cell }) => [`${address.source}@${address.start}`, cell.version])),
  }
}

describe('engine.raiseVersionFloor', () => {
  it('raises the clocks of the sources this replica writes, not a peer’s, and leaves every cell its version', () => {
    const engine = new TidemarkEngine(options)
    engine.ingest([at('d1', 1), at('d1', 2, 12)])
    const peer = createEngine({ ...options, replicaId: 'b' })
    peer.ingest([at('p1', 1)])
    const { cells, clocks } = peer.replica.exportState()
    engine.replica.mergeRemote(cells, clocks)
    expect(engine.raiseVersionFloor(1_000)).toBe(1_000)
    expect(versions(engine)).toEqual({ clocks: { d1: 1_000, p1: 1 }, cells: { 'd1@0': 1, 'd1@10': 2, 'p1@0': 1 } })
    // The next write of the cell, and of a cell not written yet, come above the floor.
    engine.ingest([at('d1', 3, 3), at('d1', 4, 24)])
    expect(versions(engine)).toEqual({ clocks: { d1: 1_002, p1: 1 }, cells: { 'd1@0': 1_001, 'd1@10': 2, 'd1@20': 1_002, 'p1@0': 1 } })
  })

  it('starts a source this replica takes up later at the floor, by an event or a finish', async () => {
    const engine = new TidemarkEngine(options)
    engine.raiseVersionFloor(500)
    engine.ingest([at('d1', 1)])
    await engine.finishSource('d2')
    expect(versions(engine).clocks).toEqual({ d1: 501, d2: 501 })
  })

  it('returns the highest version of the sources this replica writes when that is above the floor, and never lowers one', () => {
    const engine = new TidemarkEngine(options)
    engine.ingest([at('d1', 1), at('d1', 2), at('d1', 3)])
    expect(engine.raiseVersionFloor(0)).toBe(3)
    expect(engine.raiseVersionFloor(2)).toBe(3)
    expect(engine.raiseVersionFloor(10)).toBe(10)
    expect(engine.raiseVersionFloor(4)).toBe(10)
    engine.ingest([at('d2', 1)])
    expect(versions(engine).clocks).toEqual({ d1: 10, d2: 11 })
  })

  it('changes nothing a peer sees at floor 0', () => {
    const engine = new TidemarkEngine(options)
    const plain = new TidemarkEngine(options)
    engine.raiseVersionFloor(0)
    for (const e of [engine, plain]) e.ingest([at('d1', 1), at('d2', 1, 14)])
    expect(engine.replica.exportState()).toEqual(plain.replica.exportState())
  })

  it('then takes back a finish of its earlier session that the raise outranked: as a new version, published to peers', async () => {
    const earlier = new TidemarkEngine(options)
    earlier.ingest([at('d1', 1)])
    await earlier.finishSource('d1')
    const finished = earlier.replica.exportState().clocks
    // Recovered without the finish (its record lost), the floor raised.
    const engine = new TidemarkEngine(options)
    engine.ingest([at('d1', 1)])
    engine.raiseVersionFloor(1_000)
    const published: number[] = []
    engine.replica.onLocalWrite((write) => published.push(...write.clocks.map((clock) => clock.version)))
    engine.replica.mergeRemote([], finished)
    expect(engine.isFinished('d1')).toBe(true)
    expect(published).toEqual([1_001])
    // Another writer's finished clock of a lower version changes nothing: that is a conflict, not an earlier session.
    const other = new TidemarkEngine({ ...options, replicaId: 'z' })
    other.ingest([at('d2', 1)])
    await other.finishSource('d2')
    const mine = new TidemarkEngine(options)
    mine.ingest([at('d2', 1), at('d2', 2), at('d2', 3)])
    mine.replica.mergeRemote([], other.replica.exportState().clocks)
    expect(mine.isFinished('d2')).toBe(false)
  })

  it.each([-1, 1.5, Number.NaN, 2 ** 53, '5'])('refuses %s: a version is a safe integer >= 0', (floor) => {
    const engine = new TidemarkEngine(options)
    expect(() => engine.raiseVersionFloor(floor as number)).toThrow(/raiseVersionFloor needs a safe integer >= 0/)
  })
})

describe('a raised floor and the earlier session’s clock heard from a peer', () => {
  it('keeps a source first taken up from its earlier session’s clock above the floor: its next cell outranks every earlier copy', () => {
    const earlier = new TidemarkEngine(options)
    earlier.ingest([at('d1', 1), at('d1', 2)])
    const held = earlier.replica.exportState()
    // Recovered from nothing (its checkpoint damaged), the floor raised; then a peer hands back d1 as the earlier session left it.
    const engine = new TidemarkEngine(options)
    engine.raiseVersionFloor(1_000)
    engine.replica.mergeRemote(held.cells, held.clocks)
    expect(engine.nextSeq('d1')).toBe(3)
    engine.ingest([at('d1', 3)])
    expect(versions(engine)).toEqual({ clocks: { d1: 1_001 }, cells: { 'd1@0': 1_001 } })
  })

  it('publishes the clock it raised, so peers that hold a later copy of the earlier session end with the same clock', () => {
    const earlier = new TidemarkEngine(options)
    earlier.ingest([at('d1', 1), at('d1', 2)])
    const atB = earlier.replica.exportState().clocks
    earlier.ingest([at('d1', 3, 13)])
    const atC = earlier.replica.exportState().clocks
    const [b, c] = ['b', 'c'].map((replicaId) => new TidemarkEngine({ ...options, replicaId })) as [TidemarkEngine, TidemarkEngine]
    b.replica.mergeRemote([], atB)
    c.replica.mergeRemote([], atC)
    const engine = new TidemarkEngine(options)
    engine.raiseVersionFloor(1_000)
    const published: ClockEntry[] = []
    engine.replica.onLocalWrite((write) => published.push(...write.clocks))
    engine.replica.mergeRemote([], atB)
    engine.replica.mergeRemote([], atC)
    for (const peer of [b, c]) peer.replica.mergeRemote([], [...atB, ...atC, ...published])
    expect(b.replica.exportState().clocks).toEqual(engine.replica.exportState().clocks)
    expect(c.replica.exportState().clocks).toEqual(engine.replica.exportState().clocks)
    expect(versions(engine).clocks).toEqual({ d1: 1_000 })
  })
  it('is carried by checkpoint() and restore(): a source taken up after the restore starts at the floor', () => {
    const engine = new TidemarkEngine(options)
    engine.ingest([at('d1', 1)])
    engine.raiseVersionFloor(1_000)
    const resumed = new TidemarkEngine(options)
    resumed.restore(engine.checkpoint())
    resumed.ingest([at('d2', 1)])
    expect(versions(resumed).clocks).toEqual({ d1: 1_000, d2: 1_001 })
  })

  it('leaves a checkpoint at floor 0 as it was, and restores one of before the floor at 0', () => {
    const engine = new TidemarkEngine(options)
    engine.ingest([at('d1', 1)])
    const checkpoint = engine.checkpoint()
    expect(checkpoint.frontiers).not.toHaveProperty('versionFloor')
    const resumed = new TidemarkEngine(options)
    resumed.restore(checkpoint)
    resumed.ingest([at('d2', 1)])
    expect(versions(resumed).clocks).toEqual({ d1: 1, d2: 1 })
  })

  it.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '7'])('refuses a checkpoint whose versionFloor is %s, before anything changes', (floor) => {
    const engine = new TidemarkEngine(options)
    engine.ingest([at('d1', 1)])
    engine.raiseVersionFloor(1_000)
    const checkpoint = engine.checkpoint()
    const damaged = { ...checkpoint, frontiers: { ...checkpoint.frontiers, versionFloor: floor } } as unknown as typeof checkpoint
    const resumed = new TidemarkEngine(options)
    expect(() => resumed.restore(damaged)).toThrow(/frontiers\.versionFloor/)
    resumed.restore(checkpoint)
    expect(versions(resumed).clocks).toEqual({ d1: 1_000 })
  })
})
