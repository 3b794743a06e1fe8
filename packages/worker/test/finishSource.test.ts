import { describe, expect, it } from 'vitest'
import { type Engine, manual, type StreamEvent, tumbling } from '@tidemark/engine'
import { World } from './hostHarness.ts'

/** Readings `from..from + count - 1` of `source`, one per second. */
function readings(source: string, from: number, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${source}#${from + i}`, source, seq: from + i, ts: (from + i) * 1_000, key: 'k', value: 1 }))
}

describe('RemoteEngine.finishSource', () => {
  it('finishes the source on the host after every batch the page sent before it, none of them refused', async () => {
    const world = new World()
    // Few credits: most batches still wait on the page when the finish is asked for.
    const host = world.host({ name: 'fleet', engine: { windows: tumbling(10_000), watermark: manual() }, log: false, credits: 10 })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const receipts = [1, 11, 21, 31].map((from) => page.engine.ingest(readings('d1', from, 10)))
    void page.engine.ingest(readings('d2', 1, 5))
    const finished = page.engine.finishSource('d2')
    await world.run()
    await finished
    expect((await Promise.all(receipts)).map((r) => r.accepted)).toEqual([10, 10, 10, 10])
    const engine = host.host.engine as Engine
    expect(engine.stats()).toMatchObject({ ingested: 45, applied: 45 })
    expect(engine.stats().anomalies.finished_source).toBe(0)
    // d2 no longer holds P (5 s): d1's prefix does (40 s).
    expect(engine.stats().proofFrontier).toBe(40_000)
    expect(page.engine.stats().proofFrontier).toBe(40_000)
    const late = page.engine.ingest(readings('d2', 6, 1))
    await world.run()
    expect((await late).anomalies.map((a) => a.reason)).toEqual(['finished_source'])
  })

  it('waits only for the batches ingested before it: a page that keeps ingesting does not hold the finish back', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: { windows: tumbling(10_000), watermark: manual() }, log: false, credits: 10 })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const engine = host.host.engine as Engine
    // d1 streams on: each batch is ingested once the one before it is applied, 20 in all.
    let sent = 1
    const stream = async (): Promise<void> => {
      while (sent < 200) {
        const batch = page.engine.ingest(readings('d1', sent, 10))
        sent += 10
        await batch
      }
    }
    void page.engine.ingest(readings('d2', 1, 5))
    const streaming = stream()
    let appliedAtFinish = -1
    const finished = page.engine.finishSource('d2').then(() => (appliedAtFinish = engine.stats().applied))
    await world.run()
    await Promise.all([finished, streaming])
    expect(engine.stats()).toMatchObject({ applied: 205, anomalies: { finished_source: 0 } })
    // The finish reached the host long before the stream ended (d2's 5 readings and d1's first batches).
    expect(appliedAtFinish).toBeLessThan(100)
  })

  it('rejects a name that is not one, on the page or from the host', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: { windows: tumbling(10_000) }, log: false })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    await expect(page.engine.finishSource(7 as unknown as string)).rejects.toThrow(TypeError)
    const empty = expect(page.engine.finishSource('')).rejects.toThrow(/finishSource needs a source name/)
    await world.run()
    await empty
  })
})
