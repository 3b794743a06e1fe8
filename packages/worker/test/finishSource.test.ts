import { describe, expect, it, vi } from 'vitest'
import { createEngine, type Engine, type EngineOptions, type LocalWrite, manual, type StreamEvent, tumbling } from '@tidemark/engine'
import type { WorkerSourceClaim } from '../src/page/sourceRetirement.ts'
import { type TestHost, World } from './hostHarness.ts'

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

/** The local writes of a peer engine ('phone') that read three readings of `source`, then finished it. */
async function finishedOnPeer(source: string, options: EngineOptions): Promise<LocalWrite[]> {
  const peer = createEngine({ ...options, replicaId: 'phone' })
  const writes: LocalWrite[] = []
  peer.replica.onLocalWrite((write) => writes.push(structuredClone(write)))
  peer.ingest(readings(source, 1, 3))
  await peer.finishSource(source)
  return writes
}

/** A source claim that counts its retirements. */
function countingClaim(source: string): WorkerSourceClaim & { retired: number } {
  return {
    source,
    retired: 0,
    retire() {
      this.retired++
    },
  }
}

describe("a page's source claim (connectEngine's claim)", () => {
  const engineOptions = { windows: tumbling(10_000), watermark: manual() }

  it('is retired before finishSource of its source resolves, and by no finish of another source', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: engineOptions })
    const claim = countingClaim('d1')
    const page = world.page(() => host, { claim })
    await world.run()
    await page.engine.ready
    void page.engine.ingest([...readings('d1', 1, 3), ...readings('d2', 1, 3)])
    const other = page.engine.finishSource('d2')
    await world.run()
    await other
    expect(claim.retired).toBe(0)
    let retiredWhenResolved = -1
    const own = page.engine.finishSource('d1').then(() => (retiredWhenResolved = claim.retired))
    await world.run()
    await own
    expect(retiredWhenResolved).toBe(1)
    expect((host.host.engine as Engine).isFinished('d1')).toBe(true)
  })

  it("is retired by the next page given the source, when the tab that finished it went away before the host's answer; also after the host restarts from its log", async () => {
    const world = new World()
    let current: TestHost = world.host({ name: 'fleet', engine: engineOptions })
    const first = current
    const gone = countingClaim('d1')
    const finishing = world.page(() => current, { claim: gone })
    await world.run()
    await finishing.engine.ready
    void finishing.engine.ingest(readings('d1', 1, 3))
    await world.run()
    // The host commits the finish; its answer never reaches the tab, which is gone.
    finishing.connector.toPage?.drop.add('reply')
    void finishing.engine.finishSource('d1')
    await world.run()
    expect((current.host.engine as Engine).isFinished('d1')).toBe(true)
    expect(gone.retired).toBe(0)

    // The next tab session is handed d1 again (the registry never heard of the finish).
    const next = countingClaim('d1')
    const unfinished = countingClaim('d3')
    const pages = [world.page(() => current, { claim: next }), world.page(() => current, { claim: unfinished })]
    await world.run()
    await Promise.all(pages.map((p) => p.engine.ready))
    expect([next.retired, unfinished.retired]).toEqual([1, 0])

    // A host that recovers the finish from the log says so too.
    for (const p of [finishing, ...pages]) p.connector.stop()
    world.locks.crash(first.id)
    current = world.host({ name: 'fleet', engine: engineOptions })
    const afterRestart = countingClaim('d1')
    const page = world.page(() => current, { claim: afterRestart })
    await world.run(300)
    await page.engine.ready
    expect(page.engine.connection().epoch).toBe(2)
    expect(afterRestart.retired).toBe(1)
    expect(page.engine.stats().finishedSources).toBe(1)
  })
})

describe("a page's source claim finished by its writer on a peer", () => {
  const engineOptions = { windows: tumbling(10_000), watermark: manual() }

  it('is retired on the welcome, with no error reported: another replica finished the source, so it refuses every reading here too', async () => {
    // d1 written and finished on another replica (an earlier host under another replica id, a tab's own engine), heard through a doc.
    const writes = await finishedOnPeer('d1', engineOptions)
    const world = new World()
    const host = world.host({
      name: 'fleet',
      engine: engineOptions,
      setup: ({ engine }) => {
        for (const write of writes) engine.replica.mergeRemote(write.cells, write.clocks)
      },
    })
    const reported = vi.spyOn(console, 'error').mockImplementation(() => {})
    try {
      const claim = countingClaim('d1')
      const page = world.page(() => host, { claim })
      await world.run()
      await page.engine.ready
      await world.run()
      expect((host.host.engine as Engine).isFinished('d1')).toBe(true)
      expect(reported).not.toHaveBeenCalled()
      expect(claim.retired).toBe(1)
      // The page's own finishSource of the finished source resolves too.
      const again = page.engine.finishSource('d1')
      await world.run()
      await again
      expect(claim.retired).toBe(2)
    } finally {
      reported.mockRestore()
    }
  })
})

describe("a page's source claim finished by a merge after its welcome", () => {
  const engineOptions = { windows: tumbling(10_000), watermark: manual() }

  it('is retired when the merge reaches the host, once: the host tells each page whose claim it is, and only those', async () => {
    // d1 written and finished on another replica, heard through the doc only after the pages
    // connected (as by a host whose log the browser evicted, once the relay sends the state back).
    const writes = await finishedOnPeer('d1', engineOptions)
    const world = new World()
    const host = world.host({ name: 'fleet', engine: engineOptions })
    const reported = vi.spyOn(console, 'error').mockImplementation(() => {})
    try {
      const claim = countingClaim('d1')
      const other = countingClaim('d2')
      const pages = [world.page(() => host, { claim }), world.page(() => host, { claim: other })]
      await world.run()
      await Promise.all(pages.map((p) => p.engine.ready))
      expect(claim.retired).toBe(0)
      const engine = host.host.engine as Engine
      for (const write of writes) engine.replica.mergeRemote(write.cells, write.clocks)
      expect(engine.isFinished('d1')).toBe(true)
      await world.run()
      expect([claim.retired, other.retired]).toEqual([1, 0])
      // Another merge (the same state again, a later reading of d2) tells no page again.
      for (const write of writes) engine.replica.mergeRemote(write.cells, write.clocks)
      void pages[1]?.engine.ingest(readings('d2', 1, 2))
      await world.run()
      expect([claim.retired, other.retired]).toEqual([1, 0])
      expect(reported).not.toHaveBeenCalled()
    } finally {
      reported.mockRestore()
    }
  })
})

describe("a page's source claim finished by that page itself", () => {
  const engineOptions = { windows: tumbling(10_000), watermark: manual() }

  it("is retired once, by its own finish: the host does not tell it of that finish; another page holding the same source is told", async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: engineOptions })
    const claim = countingClaim('d1')
    // Another tab session handed d1 too (its registry had not heard of the finish).
    const twin = countingClaim('d1')
    const pages = [world.page(() => host, { claim }), world.page(() => host, { claim: twin })]
    await world.run()
    await Promise.all(pages.map((p) => p.engine.ready))
    const engine = host.host.engine as Engine
    const finishes = vi.spyOn(engine, 'finishSource')
    void pages[0]?.engine.ingest(readings('d1', 1, 3))
    await world.run()
    const own = pages[0]?.engine.finishSource('d1')
    await world.run()
    await own
    // Later frames (a reading of d2) tell the finishing page nothing either.
    void pages[1]?.engine.ingest(readings('d2', 1, 2))
    await world.run()
    expect([claim.retired, twin.retired]).toEqual([1, 1])
    // The page's own finish, and the twin's finish again once told.
    expect(finishes).toHaveBeenCalledTimes(2)
  })
})

describe("a page's source claim, the page closed while its welcome's finish is under way", () => {
  it('reports no error: nobody awaits that finish, and the claim is left to the next page given the source', async () => {
    const world = new World()
    const host = world.host({ name: 'fleet', engine: { windows: tumbling(10_000), watermark: manual() } })
    const finishing = world.page(() => host, { claim: countingClaim('d1') })
    await world.run()
    await finishing.engine.ready
    finishing.connector.toPage?.drop.add('reply')
    void finishing.engine.finishSource('d1')
    await world.run()
    const reported = vi.spyOn(console, 'error').mockImplementation(() => {})
    try {
      const claim = countingClaim('d1')
      const page = world.page(() => host, { claim })
      // The host's answers to this page's calls never come: its welcome's finish is still under way at close().
      page.connector.toPage?.drop.add('reply')
      await world.run()
      await page.engine.ready
      await page.engine.close()
      await world.run()
      expect(claim.retired).toBe(0)
      expect(reported).not.toHaveBeenCalled()
    } finally {
      reported.mockRestore()
    }
  })
})
