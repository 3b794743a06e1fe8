/**
 * A repeatable call re-sent to the next host after a takeover, against the batches around it
 * (README, "Writes": calls "resolve once the host ran them, after the batches ingested before
 * them, as on an engine beside the app"; "Takeovers lose nothing and count nothing twice").
 * callOrder.test.ts has the same orders without a takeover.
 */
import { describe, expect, it } from 'vitest'
import { createEngine, type Engine, manual, type StreamEvent, tumbling } from '@tidemark/engine'
import type { HostEngineOptions } from '../src/host/hostOptions.ts'
import { type TestHost, type TestPage, World } from './hostHarness.ts'

function readings(source: string, from: number, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${source}#${from + i}`, source, seq: from + i, ts: (from + i) * 1_000, key: 'k', value: 1 }))
}

const options = { windows: tumbling(10_000), watermark: manual() }
const shown = (e: Pick<Engine, 'results' | 'lateEvents'>) => ({ windows: e.results().map((r) => [r.start, r.count, r.status]), late: e.lateEvents().length })

/** The page's host crashes: what it was sent and did not answer is lost with it; the next host takes the log. */
async function crash(world: World, page: TestPage, old: TestHost, next: HostEngineOptions, make: (options: HostEngineOptions) => TestHost): Promise<TestHost> {
  ;(page.connector.toHost as { cut: boolean }).cut = true
  ;(page.connector.toPage as { cut: boolean }).cut = true
  world.locks.crash(old.id)
  world.time.end(old.id)
  const host = make(next)
  await world.run(200)
  expect(page.connector.link).toBeNull()
  page.connector.connect()
  await world.run(300)
  return host
}

describe('a call the old host did not answer, re-sent to the next host', () => {
  it('reaches it before the batches ingested after it, as it reached the old host (advanceWatermark; ingest)', async () => {
    const world = new World()
    let current: TestHost = world.host({ name: 'fleet', engine: options, log: false, credits: 50 })
    const first = current
    const make = (o: HostEngineOptions) => (current = world.host(o))
    const page = world.page(() => current)
    await world.run()
    await page.engine.ready
    // The host is frozen (its link held), then crashes: it answers neither.
    ;(page.connector.toHost as { held: boolean }).held = true
    const advanced = page.engine.advanceWatermark(20_000)
    void page.engine.ingest(readings('d1', 1, 5))
    const beside = createEngine(options)
    beside.advanceWatermark(20_000)
    beside.ingest(readings('d1', 1, 5))
    await world.run()
    const next = await crash(world, page, first, { name: 'fleet', engine: options, log: false, credits: 50 }, make)
    await advanced
    // Beside the app, and without a takeover (callOrder.test.ts): the readings come after the advance, late.
    expect(shown(beside)).toEqual({ windows: [], late: 5 })
    expect(shown(next.host.engine as Engine)).toEqual(shown(beside))
  })

  it('nextSeq; ingest: answers as before the batch ingested after it', async () => {
    const world = new World()
    let current: TestHost = world.host({ name: 'fleet', engine: options, log: false, credits: 50 })
    const first = current
    const make = (o: HostEngineOptions) => (current = world.host(o))
    const page = world.page(() => current)
    await world.run()
    await page.engine.ready
    ;(page.connector.toHost as { held: boolean }).held = true
    const next = page.engine.nextSeq('d1')
    void page.engine.ingest(readings('d1', 1, 5))
    await world.run()
    await crash(world, page, first, { name: 'fleet', engine: options, log: false, credits: 50 }, make)
    // Without a takeover the host answers 1 (the batch comes after the call).
    expect(await next).toBe(1)
  })

  it("reaches it after the batches ingested before it, past the next host's credits", async () => {
    const world = new World()
    // Leader mode during a deploy: the next leader runs another build, with fewer credits.
    let current: TestHost = world.host({ name: 'fleet', engine: options, log: false, credits: 30 })
    const first = current
    const make = (o: HostEngineOptions) => (current = world.host(o))
    const page = world.page(() => current)
    await world.run()
    await page.engine.ready
    // The host gets everything but its answers wait (a frozen host), then it crashes.
    ;(page.connector.toPage as { held: boolean }).held = true
    for (const from of [1, 11, 21]) void page.engine.ingest(readings('d1', from, 10))
    const advanced = page.engine.advanceWatermark(40_000)
    await world.run()
    const next = await crash(world, page, first, { name: 'fleet', engine: options, log: false, credits: 10 }, make)
    await world.run(500)
    await advanced
    const beside = createEngine(options)
    for (const from of [1, 11, 21]) beside.ingest(readings('d1', from, 10))
    beside.advanceWatermark(40_000)
    expect(shown(next.host.engine as Engine)).toEqual(shown(beside))
  })
})
