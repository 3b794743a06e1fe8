/**
 * The page of bench/browser/worker-offload.ts. `?engine=page` runs the engine on the page
 * (`openEngine` over IndexedDB, as an app without a worker does); `?engine=worker` connects to
 * the engine hosted in a worker (`connectEngine`, shared mode unless SharedWorker is missing).
 * `scenario`:
 * - `devices` (`devices`, `rate` per device per second, `seconds`): a dashboard of one tile per
 *   device (its last fired window, `useWindows` with a selector) and a counter, while the
 *   fleet's readings arrive every 100 ms: on the page in page mode, in the worker in worker mode
 *   (where the socket would be).
 * - `million` (`events`, `batch`): the page ingests 10^6 events in batches; nothing is drawn.
 * - `fill` (`devices`): a minute of a fleet's readings, for the memory figures.
 * - `idle`: connect and wait (takeover trials).
 */
import { createEngine, type Engine, type StreamEvent, type WindowResult } from '@tidemark/engine'
import { indexedDbPersistence, openEngine } from '@tidemark/idb'
import { EngineProvider, useEngineStats, useWindows } from '@tidemark/react'
import { connectEngine, type RemoteEngine } from '@tidemark/worker'
import { memo } from 'react'
import { createRoot } from 'react-dom/client'
import { BENCH_NAME, feedBatches, fill, millionBatches, scenarioEngine, simulate } from './fleetLoad.ts'
import type { OffloadResult } from './result.ts'

const params = new URLSearchParams(location.search)
const ENGINE = params.get('engine') === 'worker' ? 'worker' : params.get('engine') === 'control' ? 'control' : 'page'
const SCENARIO = params.get('scenario') ?? 'devices'
const DEVICES = Number(params.get('devices') ?? 200)
const RATE = Number(params.get('rate') ?? 20)
const SECONDS = Number(params.get('seconds') ?? 10)
const EVENTS = Number(params.get('events') ?? 1_000_000)
const BATCH = Number(params.get('batch') ?? 10_000)

window.addEventListener('error', (e) => {
  window.__offloadError ??= String(e.error ?? e.message)
})
window.addEventListener('unhandledrejection', (e) => {
  window.__offloadError ??= String(e.reason)
})

type Readable = Engine | RemoteEngine

async function open(): Promise<Readable> {
  if (ENGINE === 'page') {
    const options = scenarioEngine(SCENARIO)
    if (SCENARIO === 'fill') return createEngine(options)
    return openEngine({ ...options, persistence: indexedDbPersistence({ name: `bench-page-${SCENARIO}` }) })
  }
  const remote = await connectEngine({
    name: BENCH_NAME,
    shared: (name) => new SharedWorker(new URL('./host.worker.ts', import.meta.url), { type: 'module', name }),
    dedicated: (name) => new Worker(new URL('./host.worker.ts', import.meta.url), { type: 'module', name }),
    config: { scenario: SCENARIO },
  })
  window.__offloadHosts = []
  const note = (): void => {
    const c = remote.connection()
    if (c.state === 'connected' && window.__offloadHosts?.at(-1)?.instance !== c.instance) window.__offloadHosts?.push({ instance: c.instance, at: Date.now(), leader: c.leader })
  }
  note()
  remote.onConnection(note)
  return remote
}

const lastFired = (rows: readonly WindowResult[]): WindowResult | undefined => rows.findLast((r) => r.status !== 'provisional')

const Tile = memo(function Tile({ device }: { readonly device: string }) {
  const last = useWindows({ window: 'tumbling:1000', key: device }, lastFired)
  return <span>{last === undefined ? '…' : `${last.count}/${last.sum}`}</span>
})

function Counter() {
  const applied = useEngineStats((s) => s.applied)
  return <span style={{ gridColumn: 'span 4' }}>{applied} applied</span>
}

function Dashboard({ devices }: { readonly devices: readonly string[] }) {
  return (
    <>
      <Counter />
      {devices.map((device) => (
        <Tile key={device} device={device} />
      ))}
    </>
  )
}

/** Records animation-frame intervals until `stop()`. */
function frames(): { stop(): number[] } {
  const intervals: number[] = []
  let last = 0
  let running = true
  const loop = (t: number): void => {
    if (!running) return
    if (last > 0) intervals.push(t - last)
    last = t
    requestAnimationFrame(loop)
  }
  requestAnimationFrame(loop)
  return {
    stop() {
      running = false
      return intervals
    },
  }
}

/**
 * Ingests 10^6 events (`EVENTS`) in batches of `BATCH` through `ingest`. One that answers with a
 * promise (a worker's) has four batches in flight, its credits holding the rest back; one that
 * answers at once (the page engine) gets one batch per task, as batches from a socket would come.
 */
async function million(ingest: (batch: StreamEvent[]) => Promise<unknown> | undefined): Promise<Omit<OffloadResult, 'scenario' | 'engine' | 'mode' | 'windows'>> {
  await new Promise((resolve) => setTimeout(resolve, 300))
  const recording = frames()
  const t0 = performance.now()
  performance.mark('run:start')
  const events = await feedBatches(millionBatches(EVENTS, BATCH), ingest, () => new Promise((resolve) => setTimeout(resolve, 0)))
  const t1 = performance.now()
  performance.mark('run:end')
  return { runMs: t1 - t0, events, frameIntervals: recording.stop(), span: [t0, t1] }
}

/** The control: the page posts each batch to control.worker.ts, which spends `spinMs` on it and answers. */
function controlIngest(): (batch: StreamEvent[]) => Promise<unknown> {
  const worker = new Worker(new URL('./control.worker.ts', import.meta.url), { type: 'module', name: `control-${params.get('spinMs') ?? 40}` })
  const answers: (() => void)[] = []
  worker.onmessage = () => answers.shift()?.()
  return (batch) =>
    new Promise<void>((resolve) => {
      answers.push(resolve)
      worker.postMessage(batch)
    })
}

async function run(engine: Readable): Promise<OffloadResult> {
  const mode = 'connection' in engine ? engine.connection().mode : 'page'
  const base = { scenario: SCENARIO, engine: ENGINE, mode } as const
  if (SCENARIO === 'devices') {
    const devices = Array.from({ length: DEVICES }, (_, d) => `dev${d}`)
    createRoot(document.getElementById('root') as HTMLElement).render(
      <EngineProvider engine={engine}>
        <Dashboard devices={devices} />
      </EngineProvider>,
    )
    await new Promise((resolve) => setTimeout(resolve, 500))
    const recording = frames()
    const t0 = performance.now()
    performance.mark('run:start')
    const simulation = { devices: DEVICES, rate: RATE, seconds: SECONDS }
    const events =
      'connection' in engine
        ? ((await engine.command('simulate', simulation)) as number)
        : await simulate((batch) => {
            engine.ingest(batch)
          }, simulation)
    const t1 = performance.now()
    performance.mark('run:end')
    return { ...base, runMs: t1 - t0, events, frameIntervals: recording.stop(), windows: engine.results().length, span: [t0, t1] }
  }
  if (SCENARIO === 'million') {
    const ingest = 'connection' in engine ? (batch: StreamEvent[]) => engine.ingest(batch) : (batch: StreamEvent[]) => void engine.ingest(batch)
    return { ...base, ...(await million(ingest)), windows: engine.results().length }
  }
  if (SCENARIO === 'fill') {
    const t0 = performance.now()
    let events = 0
    if ('connection' in engine) {
      if (params.get('filler') === '1') events = (await engine.command('fill', DEVICES)) as number
    } else
      events = fill((batch) => {
        engine.ingest(batch as StreamEvent[])
      }, DEVICES)
    // Wait for the mirror to show the whole minute.
    const expected = DEVICES * 60
    for (let i = 0; i < 200 && engine.results().length < expected; i++) await new Promise((resolve) => setTimeout(resolve, 50))
    const t1 = performance.now()
    return { ...base, runMs: t1 - t0, events, frameIntervals: [], windows: engine.results().length, span: [t0, t1] }
  }
  return { ...base, runMs: 0, events: 0, frameIntervals: [], windows: engine.results().length, span: [0, 0] }
}

async function ready(): Promise<void> {
  const status = document.getElementById('status') as HTMLElement
  window.__offloadReady = true
  status.textContent = 'ready'
  if (params.get('wait') === '1') await new Promise<void>((resolve) => window.addEventListener('bench:go', () => resolve(), { once: true }))
}

if (ENGINE === 'control') {
  const ingest = controlIngest()
  ready()
    .then(async () => {
      window.__offloadResult = { scenario: SCENARIO, engine: 'control', mode: 'control', windows: 0, ...(await million(ingest)) }
      ;(document.getElementById('status') as HTMLElement).textContent = 'done'
    })
    .catch((error: unknown) => {
      window.__offloadError ??= String(error)
    })
} else
  open()
    .then(async (engine) => {
      // Kept alive for the memory figures: nothing else holds an engine no view reads.
      window.__offloadEngine = engine
      await ready()
      window.__offloadResult = await run(engine)
      ;(document.getElementById('status') as HTMLElement).textContent = 'done'
    })
    .catch((error: unknown) => {
      window.__offloadError ??= error instanceof Error ? `${error.name}: ${error.message}` : String(error)
    })
