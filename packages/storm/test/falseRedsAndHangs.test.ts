/**
 * The harness must not fail a correct app (a false red) nor hang: fractional readings, apps with
 * several window specs, a late lane past its bound, a batch that never turns durable, and bad
 * options. Randomized inputs are drawn from a fixed seed, printed on failure.
 */
import { createEngine, type StreamEvent, tumbling } from '@tidemark/engine'
import type { Browser, Page } from '@playwright/test'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { StormGlobals, StormSnapshot } from '../src/contract/stormPageApi.ts'
import { stormPageUrl } from '../src/contract/stormQuery.ts'
import { type StormReading, stormReading } from '../src/contract/stormReading.ts'
import { windowDigest } from '../src/contract/windowDigest.ts'
import { deviceOutcome, groundTruth, type StormTruth, tumblingTruth } from '../src/driver/groundTruth.ts'
import { runStorm, type StormOptions } from '../src/driver/runStorm.ts'
import { waitForTruth } from '../src/driver/stormPage.ts'
import { StormLedger } from '../src/driver/stormLedger.ts'
import { stormProblems } from '../src/driver/stormProblems.ts'
import { beginStormPage } from '../src/page/beginStormPage.ts'
import type { StormEngine } from '../src/page/deviceIngest.ts'
import type { StormPageEnvironment } from '../src/page/stormPageEnvironment.ts'

const SEED = 1_234_567

function environment(seed: number): { environment: StormPageEnvironment; ledger: StormLedger } {
  const ledger = new StormLedger()
  const globals: StormGlobals = { tidemarkStormReport: async (reports) => ledger.record(reports) }
  return {
    ledger,
    environment: {
      search: new URL(stormPageUrl('http://127.0.0.1/storm.html', { role: 'device', server: 'ws://127.0.0.1:1', room: 'r', seed })).search,
      globals,
      network: new EventTarget(),
      isOnline: () => true,
      now: () => Date.now(),
    },
  }
}

/** A device page driven as runStorm drives it: ingest for `ms`, stop, snapshot; its outcome as runStorm builds it. */
async function device(engine: StormEngine, seed: number, source: string, batch: number, ms: number, reading?: StormReading) {
  const { environment: env, ledger } = environment(seed)
  const api = beginStormPage(env).ready({ engine, source, ...(reading === undefined ? {} : { reading }) })
  api.start({ batch, everyMs: 10 })
  await vi.advanceTimersByTimeAsync(ms)
  await api.stop()
  const s = api.snapshot()
  return { api, snapshot: s, ledger, outcome: deviceOutcome(s, batch) }
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_764_000_000_000 })
})
afterEach(() => {
  vi.useRealTimers()
})

describe('the ground truth', () => {
  it('equals an engine fed several devices whose readings have fractional values (sums are not summed in one order)', () => {
    // A temperature-like reading: the default layout, values 20.1 .. 20.7.
    const reading: StormReading = (seed, source, seq) => ({ ...stormReading(seed, source, seq), value: 20 + ((seq % 7) + 1) / 10 })
    const truth = tumblingTruth({ windowMs: 1_000, allowedLateness: 2_000, reading })
    // A dashboard-like engine: every device's batches, interleaved, in one engine.
    const engine = createEngine({ windows: tumbling(1_000), allowedLateness: 2_000, retention: 1e12 })
    const devices = [0, 1, 2].map((k) => ({ source: `device-${k}`, seed: SEED + k }))
    const batch = 20
    const batches = 30
    for (let b = 0; b < batches; b++) {
      for (const d of devices) {
        const events: StreamEvent[] = []
        for (let seq = b * batch + 1; seq <= (b + 1) * batch; seq++) events.push(truth.reading(d.seed, d.source, seq))
        engine.ingest(events)
      }
    }
    const lateIds = engine.lateEvents().map((late) => late.event.id)
    const figures = groundTruth(
      truth,
      devices.map((d) => ({ ...d, produced: batch * batches, lateIds: lateIds.filter((id) => id.startsWith(`${d.source}#`)), firstBatchEnd: batch })),
    )
    const shown = windowDigest(engine.results())
    expect(figures.problems).toEqual([])
    expect(figures.digest, `seed=${SEED}: ${stormProblems({ truth: figures, receipts: { accepted: figures.counted, beyondLateness: figures.lateLane, duplicates: 0, rejected: 0 }, totals: { produced: figures.produced, gaps: [] }, snapshots: [{ role: 'dashboard', source: 'board', digest: shown, counted: figures.counted, errors: [] } as unknown as StormSnapshot], stopped: [], converged: true }).join('\n')}`).toBe(shown)
  })

  it('is right for an app with two window specs, whose late lane names an event once per spec that refused it', async () => {
    const minute = tumblingTruth({ windowMs: 60_000, allowedLateness: 2_000 })
    const second = tumblingTruth({ windowMs: 1_000, allowedLateness: 2_000 })
    // The app's own StormTruth for `windows: [tumbling(1_000), tumbling(60_000)]`, as the README says to write one.
    const truth: StormTruth = {
      reading: stormReading,
      digest: (events) => [second.digest(events), minute.digest(events)].filter((d) => d !== '').join('\n').split('\n').sort().join('\n'),
      canBeLate: (event, maxTs) => second.canBeLate(event, maxTs) || minute.canBeLate(event, maxTs),
      windows: ['tumbling:1000', 'tumbling:60000'],
    }
    const engine = createEngine({ windows: [tumbling(1_000), tumbling(60_000)], allowedLateness: 2_000, retention: 1e12 })
    const { snapshot, ledger, outcome } = await device(engine, SEED, 'device-a', 20, 6_000)
    const figures = groundTruth(truth, [outcome])
    const totals = ledger.totals(new Map([['device-a', snapshot.produced]]))
    const problems = stormProblems({ truth: figures, receipts: totals, totals, snapshots: [snapshot], stopped: [snapshot], converged: true })
    expect(snapshot.lateIds.length, `seed=${SEED}: the run must put events on the late lane`).toBeGreaterThan(0)
    expect(problems, `seed=${SEED} (replay: this test)`).toEqual([])
  })

  it('does not blame a correct app whose late lane outgrew limits.maxLateEvents: it names the bound', async () => {
    const truth = tumblingTruth({ windowMs: 1_000, allowedLateness: 2_000 })
    const engine = createEngine({ windows: tumbling(1_000), allowedLateness: 2_000, retention: 1e12, limits: { maxLateEvents: 5 } })
    const { snapshot, ledger, outcome } = await device(engine, SEED, 'device-a', 50, 3_000)
    const figures = groundTruth(truth, [outcome])
    const totals = ledger.totals(new Map([['device-a', snapshot.produced]]))
    const problems = stormProblems({ truth: figures, receipts: totals, totals, snapshots: [snapshot], stopped: [snapshot], converged: true })
    expect(engine.stats().lateLaneTrimmed, `seed=${SEED}`).toBeGreaterThan(0)
    // Either the truth is right, or the storm says why it cannot be: never a bare "window values differ".
    const named = problems.some((p) => p.includes('limits.maxLateEvents'))
    expect(named || problems.length === 0, `seed=${SEED}: problems were\n${problems.join('\n')}`).toBe(true)
  })
})

describe('bounded waits and documented options', () => {
  it('stop() ends, with an error naming the batch, when a durable promise never settles', async () => {
    const engine = createEngine({ windows: tumbling(1_000), allowedLateness: 2_000, retention: 1e12 })
    // An IndexedDB commit that never completes (a blocked database): durable never settles.
    const stuck: StormEngine = {
      ingest: (events) => ({ ...engine.ingest(events), durable: new Promise<void>(() => {}) }),
      stats: () => engine.stats(),
      results: () => engine.results(),
      lateEvents: () => engine.lateEvents(),
      syncStatus: () => engine.syncStatus(),
    }
    const { environment: env } = environment(SEED)
    const api = beginStormPage(env).ready({ engine: stuck, source: 'device-a' })
    api.start({ batch: 5, everyMs: 10 })
    await vi.advanceTimersByTimeAsync(25)
    let stopped = false
    void api.stop().then(() => {
      stopped = true
    })
    await vi.advanceTimersByTimeAsync(10 * 60_000)
    expect(stopped, 'stop() still pending after 10 minutes').toBe(true)
    expect(api.snapshot().errors.join('\n')).toMatch(/durable 1\.\.5: not durable after/)
  })

  it('waitForTruth with a timeout that is not a number throws instead of polling forever', async () => {
    const snapshot = { digest: 'never' } as StormSnapshot
    const page = { evaluate: async () => snapshot } as unknown as Page
    let outcome = 'pending'
    waitForTruth([page], Number.NaN, () => 'truth').then(
      () => {
        outcome = 'resolved'
      },
      (error: unknown) => {
        outcome = String(error)
      },
    )
    await vi.advanceTimersByTimeAsync(10 * 60_000)
    expect(outcome).toMatch(/RangeError: .*timeoutMs/)
  })

  it('runStorm refuses bad settleMs, network, devicesShow and toggle up front, naming the option', async () => {
    const opened: string[] = []
    const browser = {
      newContext: async () => {
        opened.push('context')
        throw new Error('opened a browser context')
      },
    } as unknown as Browser
    const base: StormOptions = { browser, baseURL: 'http://127.0.0.1:1', path: '/storm.html', server: 'ws://127.0.0.1:2', truth: tumblingTruth({ windowMs: 1_000, allowedLateness: 0 }), seconds: 1, seed: 1 }
    await expect(runStorm({ ...base, settleMs: Number.NaN })).rejects.toThrow(/RangeError: runStorm: settleMs|runStorm: settleMs/)
    await expect(runStorm({ ...base, settleMs: -1 })).rejects.toThrow(/settleMs/)
    await expect(runStorm({ ...base, network: 'partitioned' as 'partition' })).rejects.toThrow(/network/)
    await expect(runStorm({ ...base, devicesShow: 'all' as 'own' })).rejects.toThrow(/devicesShow/)
    await expect(runStorm({ ...base, toggle: [0, 500] })).rejects.toThrow(/runStorm: toggle/)
    expect(opened).toEqual([])
  })
})
