/**
 * The fixtures of the call-order tests (callOrder.test.ts, callOrderAcrossTakeover.test.ts): a
 * page and its host with few credits, readings one per second, and what an engine shows of them.
 */
import { type Engine, manual, type StreamEvent, tumbling } from '@tidemark/engine'
import type { HostEngineOptions } from '../src/host/hostOptions.ts'
import { type TestHost, type TestPage, World } from './hostHarness.ts'

/** Readings `from..from + count - 1` of `source`, one per second. */
export function readings(source: string, from: number, count: number): StreamEvent[] {
  return Array.from({ length: count }, (_, i) => ({ id: `${source}#${from + i}`, source, seq: from + i, ts: (from + i) * 1_000, key: 'k', value: 1 }))
}

export const options = { windows: tumbling(10_000), watermark: manual() }

/** The windows (start, count, status) and the late lane's size of an engine or a page. */
export const shown = (e: Pick<Engine, 'results' | 'lateEvents'>) => ({ windows: e.results().map((r) => [r.start, r.count, r.status]), late: e.lateEvents().length })

/** Events of `source` on the late lane of an engine or a page. */
export const lateOf = (e: Pick<Engine, 'lateEvents'>, source: string): number => e.lateEvents().filter((l) => l.event.source === source).length

/**
 * A page welcomed by a host granting `credits` (few: later batches wait on the page), and
 * `crash(credits)`, which crashes that host (what it was sent and did not answer is lost with it)
 * and has the page welcomed by the next one, granting `credits`.
 */
export async function fewCredits(credits: number) {
  const world = new World()
  const host = (next: number): TestHost => world.host({ name: 'fleet', engine: options, log: false, credits: next } satisfies HostEngineOptions)
  let current = host(credits)
  const page: TestPage = world.page(() => current)
  await world.run()
  await page.engine.ready
  const crash = async (next: number): Promise<TestHost> => {
    ;(page.connector.toHost as { cut: boolean }).cut = true
    ;(page.connector.toPage as { cut: boolean }).cut = true
    world.locks.crash(current.id)
    world.time.end(current.id)
    current = host(next)
    await world.run(200)
    if (page.connector.link !== null) throw new Error('the page still holds the crashed host')
    page.connector.connect()
    await world.run(300)
    return current
  }
  return { world, page, engine: current.host.engine as Engine, crash }
}
