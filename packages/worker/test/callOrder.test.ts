/**
 * The page's calls reach the host after the batches ingested before them, as on `Engine`
 * (README, "Writes": `nextSeq`, `advanceWatermark` and `tick` run on the host): a batch that
 * waits on the page for credits is sent before a later call, so `ingest(a); ingest(b);
 * advanceWatermark(t)` counts `b` in its windows as an engine beside the app would, and
 * `nextSeq` answers past `b`'s seqs; and a batch ingested after the call, sent in the same turn
 * as those, does not pass it.
 */
import { describe, expect, it } from 'vitest'
import { fewCredits, lateOf, options, readings, shown } from './callOrderWorld.ts'
import { createEngine, isOverflowError, } from '@tidemark/engine'
import { MAX_PENDING_CALLS } from '../src/page/hostCalls.ts'
import { World } from './hostHarness.ts'

describe("a call after batches that wait on the page for credits", () => {
  it('advanceWatermark: the batches before it are counted in their windows, none late, as on an engine', async () => {
    const { world, page, engine } = await fewCredits(10)
    const beside = createEngine(options)
    for (const from of [1, 11, 21]) {
      void page.engine.ingest(readings('d1', from, 10))
      beside.ingest(readings('d1', from, 10))
    }
    const advanced = page.engine.advanceWatermark(40_000)
    beside.advanceWatermark(40_000)
    await world.run()
    await advanced
    expect(shown(beside)).toEqual({ windows: [[0, 9, 'on_time'], [10_000, 10, 'on_time'], [20_000, 10, 'on_time'], [30_000, 1, 'on_time']], late: 0 })
    expect(shown(engine)).toEqual(shown(beside))
    expect(shown(page.engine)).toEqual(shown(beside))
  })

  it("nextSeq: answers past the seqs of the batches before it", async () => {
    const { world, page } = await fewCredits(10)
    for (const from of [1, 11, 21]) void page.engine.ingest(readings('d1', from, 10))
    const next = page.engine.nextSeq('d1')
    await world.run()
    expect(await next).toBe(31)
  })

  it('a call with no batch waiting is sent at once: a batch ingested after it reaches the host after it', async () => {
    const { world, page, engine } = await fewCredits(10)
    const advanced = page.engine.advanceWatermark(20_000)
    void page.engine.ingest(readings('d1', 1, 5))
    await world.run()
    await advanced
    // Behind the watermark already (no lateness): the readings went to the late lane.
    expect(engine.lateEvents().length).toBe(5)
  })
})

describe('a call made while batches wait for credits, and a batch ingested after it', () => {
  it('advanceWatermark: the batch ingested after the call is late, as on an engine beside the app', async () => {
    const { world, page, engine } = await fewCredits(20)
    const beside = createEngine(options)
    // 20 events take every credit; the next 5 wait on the page.
    const before = [readings('d1', 1, 20), readings('d1', 21, 5)]
    for (const batch of before) {
      void page.engine.ingest(batch)
      beside.ingest(batch)
    }
    const advanced = page.engine.advanceWatermark(40_000)
    beside.advanceWatermark(40_000)
    // Ingested after the call: behind its watermark, so late.
    const after = readings('d2', 1, 5)
    void page.engine.ingest(after)
    beside.ingest(after)
    await world.run()
    await advanced
    expect(lateOf(beside, 'd2')).toBe(5)
    expect(lateOf(engine, 'd2')).toBe(lateOf(beside, 'd2'))
  })

  it('nextSeq: does not answer past the seqs of a batch ingested after the call', async () => {
    const { world, page } = await fewCredits(20)
    void page.engine.ingest(readings('d1', 1, 20))
    void page.engine.ingest(readings('d1', 21, 5))
    const next = page.engine.nextSeq('d1')
    void page.engine.ingest(readings('d1', 26, 5))
    await world.run()
    // On an engine beside the app it answers 26; it must never count the third batch (made after it).
    expect(await next).toBe(26)
  })

  it('two advances with a batch between them, made while batches wait: the batch is late for the first', async () => {
    const { world, page, engine } = await fewCredits(20)
    void page.engine.ingest(readings('d1', 1, 20))
    void page.engine.ingest(readings('d1', 21, 5))
    const first = page.engine.advanceWatermark(40_000)
    void page.engine.ingest(readings('d2', 1, 5))
    const second = page.engine.advanceWatermark(50_000)
    await world.run()
    await Promise.all([first, second])
    expect(lateOf(engine, 'd2')).toBe(5)
  })
})

describe('ingest + advanceWatermark per reading while no host serves the page', () => {
  // 10,005 one-reading ingests served one by one once the host comes: about 2 s on an idle machine.
  it('waiting advances merge into one: none is refused while the ingest queue still takes the readings', { timeout: 30_000 }, async () => {
    const world = new World()
    let host: ReturnType<World['host']> | null = null
    const page = world.page(() => host)
    const refused: unknown[] = []
    const advances: Promise<void>[] = []
    const receipts: Promise<unknown>[] = []
    for (let i = 1; i <= MAX_PENDING_CALLS + 5; i++) {
      receipts.push(page.engine.ingest([{ id: `d1#${i}`, source: 'd1', seq: i, ts: i, key: 'k', value: 1 }]))
      const a = page.engine.advanceWatermark(i)
      a.catch((e) => refused.push(e))
      advances.push(a)
    }
    await world.run()
    expect(page.engine.connection().queuedEvents).toBe(MAX_PENDING_CALLS + 5)
    expect(refused.filter(isOverflowError).length).toBe(0)
    // And once a host serves the page, every advance resolves.
    host = world.host({ name: 'fleet', engine: options, log: false })
    page.connector.connect()
    await world.run(500)
    await Promise.all(receipts)
    await Promise.allSettled(advances)
    expect(refused.length).toBe(0)
  })

  it('waiting ticks merge into one (tick per reading)', async () => {
    const world = new World()
    const page = world.page(() => null)
    const refused: unknown[] = []
    const ingestRefused: unknown[] = []
    for (let i = 1; i <= MAX_PENDING_CALLS + 5; i++) {
      page.engine.ingest([{ id: `d1#${i}`, source: 'd1', seq: i, ts: i, key: 'k', value: 1 }]).catch((e) => ingestRefused.push(e))
      page.engine.tick().catch((e) => refused.push(e))
    }
    await world.run()
    // The readings all still wait in the ingest queue, and neither a tick nor a reading was refused.
    expect(page.engine.connection().queuedEvents).toBe(MAX_PENDING_CALLS + 5)
    expect(ingestRefused).toEqual([])
    expect(refused).toEqual([])
  })
})

describe('advanceWatermark(t); command(...) while batches wait on the page for credits', () => {
  it('the command runs after the advance made before it', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: options, log: false, credits: 10, commands: { watermark: (_p, { engine }) => engine.watermark() } })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    for (const from of [1, 11, 21]) void page.engine.ingest(readings('d1', from, 10))
    const advanced = page.engine.advanceWatermark(40_000)
    const seen = page.engine.command('watermark')
    await world.run()
    await advanced
    expect(await seen).toBe(40_000)
  })
})
