/**
 * The page's mirror against the host's engine (README, "Panes" and "Limits"): the page's change
 * feed keeps a running total right however many changes a frame folded ("a `retract` always
 * names [the result that consumer shows]", docs/semantics.md, Changes), and final windows leave
 * the mirror at the watermark they leave the engine: a final session a peer grew at its new end's
 * time, and, with `retention: Infinity`, never.
 */
import { describe, expect, it } from 'vitest'
import { boundedOutOfOrderness, type Engine, manual, session, tumbling, type WindowChange } from '@tidemark/engine'
import { World } from './hostHarness.ts'

/**
 * A consumer of accumulating, retracting changes (docs/semantics.md, Changes): it keeps a running
 * total of `count` over the windows it was shown, subtracting what each change replaces and what
 * each retraction withdraws ("a `retract` always names [the result that consumer shows]").
 */
function totals() {
  const shown = new Map<string, number>()
  const problems: string[] = []
  let total = 0
  const id = (c: WindowChange) => `${c.result.window}|${c.result.key}|${c.result.start}`
  const listener = (changes: readonly WindowChange[]) => {
    for (const c of changes) {
      const before = shown.get(id(c))
      if (c.type === 'retract') {
        if (before === undefined) problems.push(`retract of ${id(c)} (count ${c.result.count}), never shown`)
        total -= c.result.count
        shown.delete(id(c))
        continue
      }
      total += c.result.count - (before ?? 0)
      shown.set(id(c), c.result.count)
    }
  }
  return { listener, problems, total: () => total }
}

/** A host of session windows (gap 50) and a page, each with a running total of what its feed showed. */
async function sessionsWithTotals() {
  const world = new World()
  const host = world.host({ name: 'fleet', engine: { windows: session(50), watermark: manual() }, log: false })
  const page = world.page(() => host)
  await world.run()
  await page.engine.ready
  const engine = host.host.engine as Engine
  const onEngine = totals()
  const onPage = totals()
  engine.subscribe(onEngine.listener)
  page.engine.subscribe(onPage.listener)
  return { world, engine, page, onEngine, onPage }
}

describe('a session whose start moved within one frame', () => {
  it("retracts on the page only what the page's feed showed, so a running total stays right", async () => {
    const { world, engine, page, onEngine, onPage } = await sessionsWithTotals()
    // Two batches within one frame (16 ms): the second, earlier reading moves the session's start.
    void page.engine.ingest([{ id: 'a', source: 'd1', seq: 1, ts: 100, key: 'k', value: 1 }])
    void page.engine.ingest([{ id: 'b', source: 'd1', seq: 2, ts: 80, key: 'k', value: 1 }])
    await world.run()
    expect(engine.results().map((r) => [r.start, r.count])).toEqual([[80, 2]])
    expect(page.engine.results().map((r) => [r.start, r.count])).toEqual([[80, 2]])
    expect({ problems: onEngine.problems, total: onEngine.total() }).toEqual({ problems: [], total: 2 })
    expect({ problems: onPage.problems, total: onPage.total() }).toEqual({ problems: [], total: 2 })
  })
  it('retracts on the page the result the page showed, not a later one it never saw', async () => {
    const { world, page, onEngine, onPage } = await sessionsWithTotals()
    await page.engine.ingest([{ id: 'a', source: 'd1', seq: 1, ts: 100, key: 'k', value: 1 }])
    await world.run()
    // Within one frame: the session grows (count 2), then an earlier reading moves its start.
    void page.engine.ingest([{ id: 'b', source: 'd1', seq: 2, ts: 110, key: 'k', value: 1 }])
    void page.engine.ingest([{ id: 'c', source: 'd1', seq: 3, ts: 80, key: 'k', value: 1 }])
    await world.run()
    expect(page.engine.results().map((r) => [r.start, r.count])).toEqual([[80, 3]])
    expect({ problems: onEngine.problems, total: onEngine.total() }).toEqual({ problems: [], total: 3 })
    expect({ problems: onPage.problems, total: onPage.total() }).toEqual({ problems: [], total: 3 })
  })
})

// The engine test 'final sessions a peer reshapes' (packages/engine/test/sessionFragments.test.ts), with the engine in a host.
const options = { windows: session(50), allowedLateness: 200, retention: 500, watermark: boundedOutOfOrderness(30), now: () => 0, replicaId: 'me' }
const fragment = (source: string, start: number, maxTs: number, count: number, version: number) => ({
  address: { window: 'session:50', key: 'b', start, source },
  cell: { count, sum: count, min: 1, max: 1, maxTs, version },
})
const shown = (engine: Pick<Engine, 'results'>) => engine.results({ key: 'b' }).map((r) => `[${r.start},${r.end}) ${r.count} ${r.status}${r.final ? ' final' : ''}`)

describe('a final session a peer grew', () => {
  it('leaves the mirror at the watermark it leaves the engine', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: options, log: false })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    const engine = host.host.engine as Engine & { replica: { mergeRemote(cells: unknown[], clocks: unknown[]): unknown } }
    await page.engine.ingest([{ id: 'x1', source: 'd3', ts: 1_000_013, value: 1, key: 'b' }])
    await page.engine.ingest([{ id: 'x2', source: 'd3', ts: 1_000_299, value: 1, key: 'c' }])
    await world.run()
    // What the host's setup (a relay, a BroadcastChannelProvider) does when a peer's cell arrives.
    engine.replica.mergeRemote([fragment('p1', 1_000_061, 1_000_104, 2, 2)], [])
    await world.run()
    expect(shown(engine)).toEqual(['[1000013,1000154) 3 corrected final'])
    expect(shown(page.engine)).toEqual(shown(engine))
    await page.engine.ingest([{ id: 'x3', source: 'd3', ts: 1_001_118, value: 1, key: 'c' }, { id: 'y1', source: 'd2', ts: 1_000_862, value: 1, key: 'a' }])
    await world.run()
    await page.engine.ingest([{ id: 'x4', source: 'd3', ts: 1_005_000, value: 1, key: 'c' }, { id: 'y2', source: 'd2', ts: 1_005_000, value: 1, key: 'a' }])
    await world.run()
    // The engine dropped the session at its new end's time; the page's watermark is far past it.
    expect(shown(engine)).toEqual([])
    expect(page.engine.watermark()).toBe(engine.watermark())
    expect(shown(page.engine)).toEqual([])
  })
})

describe('retention Infinity and the end of event time', () => {
  it('keeps final windows in the mirror as the engine keeps them in results()', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: { windows: tumbling(10), watermark: manual(), retention: Number.POSITIVE_INFINITY }, log: false })
    const page = world.page(() => host)
    await world.run()
    await page.engine.ready
    await page.engine.ingest([{ id: 'a', source: 'd1', seq: 1, ts: 5, key: 'k', value: 1 }])
    await world.run()
    // Ends event time: every window fires and turns final; with retention Infinity none leaves.
    await page.engine.advanceWatermark(Number.POSITIVE_INFINITY)
    await world.run()
    const engine = host.host.engine as Engine
    expect(engine.results().map((r) => [r.key, r.final])).toEqual([['k', true]])
    expect(page.engine.watermark()).toBe(Number.POSITIVE_INFINITY)
    expect(page.engine.results().map((r) => [r.key, r.final])).toEqual(engine.results().map((r) => [r.key, r.final]))
  })
})
