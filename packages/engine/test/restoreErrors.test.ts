/**
 * A checkpoint `restore` cannot read to the end (docs/bad-input.md B50): refused before it
 * changes anything when its format, configuration or replica is another, else the engine stops
 * rather than serve windows restored without their cells.
 */
import { describe, expect, it } from 'vitest'
import { type EngineCheckpoint, TidemarkEngine, tumbling } from '../src/index.ts'
import { reading } from '../src/testing/index.ts'

const options = { windows: tumbling(10), replicaId: 'a', now: () => 0 }

function checkpointOfTwo(): EngineCheckpoint {
  const engine = new TidemarkEngine(options)
  engine.ingest([reading('d1', 1, 1, 3), reading('d1', 2, 2, 4)])
  return engine.checkpoint()
}

describe('restore of a checkpoint it cannot read', () => {
  it('a window of a spec this engine does not have: restore throws, and the half restored engine stops instead of serving', () => {
    const checkpoint = checkpointOfTwo()
    const tampered = { ...checkpoint, windows: [...checkpoint.windows, { ...(checkpoint.windows[0] as EngineCheckpoint['windows'][number]), window: 'tumbling:5' }] }
    const engine = new TidemarkEngine(options)
    expect(() => engine.restore(tampered)).toThrow('engine stopped: checkpoint holds window spec tumbling:5, which this engine does not have')
    // It served the window without its cells: the next event showed a count of 1, the two restored events were gone.
    expect(() => engine.ingest([reading('d1', 3, 3, 5)])).toThrow(/engine stopped: checkpoint holds window spec tumbling:5/)
    expect(() => engine.checkpoint()).toThrow(/engine stopped/)
    const fresh = new TidemarkEngine(options)
    fresh.restore(checkpoint)
    expect(fresh.ingest([reading('d1', 3, 3, 5)]).accepted).toBe(1)
    expect(fresh.results()).toMatchObject([{ start: 0, count: 3, sum: 12 }])
  })

  it('another configuration or replica: restore throws before it changes anything, and the engine serves', () => {
    const checkpoint = checkpointOfTwo()
    const engine = new TidemarkEngine(options)
    expect(() => engine.restore({ ...checkpoint, configuration: '{}' })).toThrow(/checkpoint was written with \{\}/)
    expect(() => engine.restore({ ...checkpoint, replicaId: 'b' })).toThrow(/written by replica 'b'/)
    engine.restore(checkpoint)
    expect(engine.ingest([reading('d1', 3, 3, 5)]).accepted).toBe(1)
    expect(engine.results()).toMatchObject([{ start: 0, count: 3, sum: 12 }])
  })
})
