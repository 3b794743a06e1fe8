/**
 * A repeatable call re-sent to the next host after a takeover, against the batches around it
 * (README, "Writes": calls "resolve once the host ran them, after the batches ingested before
 * them, as on an engine beside the app"; "Takeovers lose nothing and count nothing twice").
 * callOrder.test.ts has the same orders without a takeover.
 */
import { describe, expect, it } from 'vitest'
import { fewCredits, options, readings, shown } from './callOrderWorld.ts'
import { createEngine, type Engine, } from '@tidemark/engine'

describe('a call the old host did not answer, re-sent to the next host', () => {
  it('reaches it before the batches ingested after it, as it reached the old host (advanceWatermark; ingest)', async () => {
    const { world, page, crash } = await fewCredits(50)
    // The host is frozen (its link held), then crashes: it answers neither.
    ;(page.connector.toHost as { held: boolean }).held = true
    const advanced = page.engine.advanceWatermark(20_000)
    void page.engine.ingest(readings('d1', 1, 5))
    const beside = createEngine(options)
    beside.advanceWatermark(20_000)
    beside.ingest(readings('d1', 1, 5))
    await world.run()
    const next = await crash(50)
    await advanced
    // Beside the app, and without a takeover (callOrder.test.ts): the readings come after the advance, late.
    expect(shown(beside)).toEqual({ windows: [], late: 5 })
    expect(shown(next.host.engine as Engine)).toEqual(shown(beside))
  })

  it('nextSeq; ingest: answers as before the batch ingested after it', async () => {
    const { world, page, crash } = await fewCredits(50)
    ;(page.connector.toHost as { held: boolean }).held = true
    const next = page.engine.nextSeq('d1')
    void page.engine.ingest(readings('d1', 1, 5))
    await world.run()
    await crash(50)
    // Without a takeover the host answers 1 (the batch comes after the call).
    expect(await next).toBe(1)
  })

  it("reaches it after the batches ingested before it, past the next host's credits", async () => {
    // Leader mode during a deploy: the next leader runs another build, with fewer credits.
    const { world, page, crash } = await fewCredits(30)
    // The host gets everything but its answers wait (a frozen host), then it crashes.
    ;(page.connector.toPage as { held: boolean }).held = true
    for (const from of [1, 11, 21]) void page.engine.ingest(readings('d1', from, 10))
    const advanced = page.engine.advanceWatermark(40_000)
    await world.run()
    const next = await crash(10)
    await world.run(500)
    await advanced
    const beside = createEngine(options)
    for (const from of [1, 11, 21]) beside.ingest(readings('d1', from, 10))
    beside.advanceWatermark(40_000)
    expect(shown(next.host.engine as Engine)).toEqual(shown(beside))
  })
})
