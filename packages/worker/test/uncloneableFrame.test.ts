/**
 * A frame the structured clone refuses (README: "Bad input always gets a clear error; the
 * process keeps serving"; "for a user aggregate whose result is of another shape, that value
 * structured-cloned"). A user aggregate's `result` that holds a function cannot cross a port:
 * the host must keep serving every page, no other page may miss rows, and the page whose frame
 * cannot be sent must be told why. Every page gets the same rows, so each is told.
 */
import { describe, expect, it } from 'vitest'
import { defineAggregate, type Engine, manual, tumbling } from '@tidemark/engine'
import { World } from './hostHarness.ts'

/** A sum, shown as a number, except for key 'bad', whose result holds a function. */
const labelled = defineAggregate<number, unknown>({
  name: 'labelled',
  init: () => 0,
  add: (state, value) => state + value,
  merge: (a, b) => a + b,
  result: (state) => (state === 99 ? { total: state, format: () => `${state}` } : state),
  encode: (state) => new Uint8Array(Float64Array.of(state).buffer),
  decode: (bytes) => new Float64Array(bytes.slice().buffer)[0] as number,
})

const options = { windows: tumbling(1_000), watermark: manual(), aggregates: { labelled } }

/** Runs the world, keeping what escaped the host's timers (in a worker: an uncaught error nobody on the page sees). */
async function run(world: World, escaped: unknown[], ms = 100): Promise<void> {
  for (let i = 0; i < 5; i++) {
    try {
      await world.run(ms / 5)
    } catch (error) {
      escaped.push(error)
    }
  }
}

describe('a frame the structured clone refuses', () => {
  it('does not make the pages after it in the tick miss the rows, and the page it was for is told why', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: options, log: false })
    const first = world.page(() => host, { aggregates: { labelled } })
    const second = world.page(() => host, { aggregates: { labelled } })
    const escaped: unknown[] = []
    await run(world, escaped)
    await first.engine.ready
    await second.engine.ready
    const engine = host.host.engine as Engine
    // One tick: a good window and a window whose aggregate the clone refuses.
    engine.ingest([
      { id: 'g1', source: 'd1', seq: 1, ts: 100, key: 'good', value: 1 },
      { id: 'b1', source: 'd1', seq: 2, ts: 100, key: 'bad', value: 99 },
    ])
    await run(world, escaped)
    // Then another window only: nothing touches 'good' again.
    engine.ingest([{ id: 'o1', source: 'd1', seq: 3, ts: 200, key: 'other', value: 1 }])
    await run(world, escaped)
    expect(engine.results().map((r) => [r.key, r.count]).sort()).toEqual([['bad', 1], ['good', 1], ['other', 1]])

    const goods = (page: typeof first) => page.engine.results().filter((r) => r.key === 'good').map((r) => r.count)
    // Each page either shows the good window or was told why it cannot be served.
    const seen = (page: typeof first) => ({ good: goods(page), told: page.engine.connection().reason })
    const servedOrTold = { asymmetricMatch: (x: { good: number[]; told: string | null }) => (x.good.length === 1 && x.good[0] === 1) || /clone/i.test(x.told ?? '') }
    expect({
      // The error left the host's frame timer (in a worker: to its global error handler only).
      escaped: escaped.map((e) => String(e)),
      first: seen(first),
      second: seen(second),
    }).toEqual({ escaped: [], first: servedOrTold, second: servedOrTold })
  })

  it('the reason names the aggregate and the window whose result the clone refused', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: options, log: false })
    const page = world.page(() => host)
    const escaped: unknown[] = []
    await run(world, escaped)
    await page.engine.ready
    const engine = host.host.engine as Engine
    engine.ingest([
      { id: 'g1', source: 'd1', seq: 1, ts: 100, key: 'good', value: 1 },
      { id: 'b1', source: 'd1', seq: 2, ts: 1_100, key: 'bad', value: 99 },
    ])
    await run(world, escaped)
    expect(page.engine.connection()).toMatchObject({
      state: 'failed',
      reason: expect.stringMatching(/^the host cannot send this page the engine's windows \(aggregate "labelled" of window "tumbling:1000", key "bad", start 1000: DataCloneError: .*could not be cloned\.?\): /),
    })
    // A page that comes later is told the same.
    const late = world.page(() => host)
    await run(world, escaped)
    expect(late.engine.connection().reason).toMatch(/aggregate "labelled" of window "tumbling:1000", key "bad", start 1000: DataCloneError/)
    expect(escaped).toEqual([])
  })

  it('a page that comes while such a window is live is welcomed or told why, not left waiting', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: options, log: false })
    const first = world.page(() => host)
    const escaped: unknown[] = []
    await run(world, escaped)
    await first.engine.ready
    const engine = host.host.engine as Engine
    engine.ingest([{ id: 'b1', source: 'd1', seq: 1, ts: 100, key: 'bad', value: 99 }])
    await run(world, escaped)
    escaped.length = 0
    // What a page's message makes the host throw (in a worker: an uncaught error of its port's listener).
    const receive = host.host.receive.bind(host.host)
    host.host.receive = (link, message) => {
      try {
        receive(link, message)
      } catch (error) {
        escaped.push(error)
      }
    }
    const late = world.page(() => host)
    await run(world, escaped, 1_000)
    expect({ escaped: escaped.map((e) => String(e)), state: late.engine.connection().state, reason: late.engine.connection().reason }).toEqual({
      escaped: [],
      state: expect.stringMatching(/connected|failed/),
      reason: expect.stringMatching(/labelled|clone/i),
    })
  })
})
