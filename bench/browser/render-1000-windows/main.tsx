/**
 * The page of bench/browser/render-1000-windows.ts: 1,000 `useWindow` tiles
 * under one `EngineProvider`, while events arrive at 20k/s for 10 s. Query
 * parameters `components`, `rate` (events/s), `seconds` and `message` (events
 * per network message) change the load; `view` chooses how a tile shows its
 * window's mean: `dom`, a text span in a fixed grid (React commits the text),
 * or `canvas`, a cell of one shared canvas that the tile paints in a layout
 * effect (React renders the tile, the browser lays nothing out); `dom-floor`
 * and `canvas-floor` do the same DOM or canvas work with no engine, bindings
 * or React (see floor.ts). Leaves a `PageResult` on
 * `window.__result`, or a message on `window.__error`.
 *
 * Timed in the page: every `engine.ingest` call (the engine's share; it
 * includes the synchronous notification of the provider's feed), every frame
 * the provider's feed runs (the bindings' fan-out to 1,000 observers), and
 * React's render and commit that follows it. Their spans go out with the
 * result, and the runner places them on the Chrome trace's timeline next to
 * style, layout and paint (through the `run:start` mark). Not as
 * `performance.measure`: with tracing on, each costs about half a
 * millisecond, more than the ingest it would time.
 */
import { createEngine, type StreamEvent, tumbling } from '@tidemark/engine'
import { createFrameScheduler, EngineProvider, type FrameScheduler, useWindow } from '@tidemark/react'
import { memo, type ReactNode, useLayoutEffect } from 'react'
import { createRoot } from 'react-dom/client'
import { startFloor } from './floor.ts'
import { type PageResult, percentiles } from './result.ts'

declare global {
  interface Window {
    __result?: PageResult
    __error?: string
  }
}

const params = new URLSearchParams(location.search)
const COMPONENTS = Number(params.get('components') ?? 1000)
const RATE = Number(params.get('rate') ?? 20_000)
const SECONDS = Number(params.get('seconds') ?? 10)
/** Events per network message: 100 at 20k/s is a message every 5 ms. */
const MESSAGE = Number(params.get('message') ?? 100)
const VIEWS = ['dom', 'canvas', 'dom-floor', 'canvas-floor'] as const
const VIEW = VIEWS.find((view) => view === params.get('view')) ?? 'dom'
const FLOOR = VIEW === 'dom-floor' || VIEW === 'canvas-floor'
const ON_CANVAS = VIEW === 'canvas' || VIEW === 'canvas-floor'
const TICK_MS = 5
const SOURCES = 50
const WINDOW_SIZE = 3_600_000
const WINDOW_ID = `tumbling:${WINDOW_SIZE}`

window.addEventListener('error', (e) => {
  window.__error ??= String(e.error ?? e.message)
})
window.addEventListener('unhandledrejection', (e) => {
  window.__error ??= String(e.reason)
})

const keys = Array.from({ length: COMPONENTS }, (_, i) => `k${i}`)

// Events are made before the run so the measured tasks hold only ingest and
// rendering. Event time follows the schedule (ms since the start), all inside
// the first hour, so each key has one open window that every event of the key
// updates (a `provisional` change), and nothing is late. Round robin over the
// keys: every event changes a different window than the one before it, the
// worst case for rendering.
const total = Math.round(RATE * SECONDS)
const events: StreamEvent[] = new Array(total)
for (let i = 0; i < total; i++) {
  events[i] = {
    id: `e${i}`,
    source: `s${i % SOURCES}`,
    ts: Math.floor((i * 1000) / RATE),
    key: keys[i % COMPONENTS] as string,
    value: Math.round(Math.random() * 1000) / 10,
  }
}

const engine = createEngine({ windows: tumbling(WINDOW_SIZE) })

let measuring = false

// The bindings' fan-out and React's render + commit, timed around each frame
// the provider's feed runs. React renders `useSyncExternalStore` updates in a
// microtask it queues during the fan-out; ours is queued after it, so it runs
// once React has committed.
const fanOutTimes: number[] = []
const reactTimes: number[] = []
/** `performance.now()` start and end of each, flat. */
const spans = { ingest: [] as number[], fanOut: [] as number[], react: [] as number[] }
const frameScheduler = createFrameScheduler()
const timedTasks = new WeakMap<() => void, () => void>()
const scheduler: FrameScheduler = {
  schedule(task) {
    let timed = timedTasks.get(task)
    if (timed === undefined) {
      timed = () => {
        const t0 = performance.now()
        task()
        const t1 = performance.now()
        queueMicrotask(() => {
          const t2 = performance.now()
          if (!measuring) return
          fanOutTimes.push(t1 - t0)
          reactTimes.push(t2 - t1)
          spans.fanOut.push(t0, t1)
          spans.react.push(t1, t2)
        })
      }
      timedTasks.set(task, timed)
    }
    return frameScheduler.schedule(timed)
  },
}

// Renders per tile per frame. `document.timeline.currentTime` is the time of
// the animation frame being rendered and stays the same until the next one, so
// it names the frame a render belongs to (a render outside any frame counts
// toward the last one, which can only overstate renders per frame).
const lastFrame = new Float64Array(COMPONENTS).fill(-1)
const inFrame = new Int32Array(COMPONENTS)
let maxPerFrame = 0
let totalRenders = 0
let measuredRenders = 0
let renderingPairs = 0

function countRender(index: number): void {
  totalRenders++
  if (!measuring) return
  measuredRenders++
  const frame = Number(document.timeline.currentTime ?? 0)
  if (lastFrame[index] === frame) {
    const n = (inFrame[index] as number) + 1
    inFrame[index] = n
    if (n > maxPerFrame) maxPerFrame = n
  } else {
    lastFrame[index] = frame
    inFrame[index] = 1
    if (maxPerFrame === 0) maxPerFrame = 1
    renderingPairs++
  }
}

const COLUMNS = 40
const TILE_WIDTH = 30
const TILE_HEIGHT = 14

const TextTile = memo(function TextTile({ index }: { index: number }): ReactNode {
  const result = useWindow(WINDOW_ID, keys[index] as string, 0)
  countRender(index)
  return <span>{result === undefined ? '…' : result.mean.toFixed(1)}</span>
})

// The canvas is made outside React, so every tile can paint into it from its
// first layout effect on.
const canvas = document.createElement('canvas')
canvas.width = COLUMNS * TILE_WIDTH
canvas.height = Math.ceil(COMPONENTS / COLUMNS) * TILE_HEIGHT
const context = canvas.getContext('2d')

function paintTile(index: number, text: string): void {
  if (context === null) throw new Error('no 2d canvas context')
  const x = (index % COLUMNS) * TILE_WIDTH
  const y = Math.floor(index / COLUMNS) * TILE_HEIGHT
  context.fillStyle = '#fff'
  context.fillRect(x, y, TILE_WIDTH, TILE_HEIGHT)
  context.fillStyle = '#000'
  context.fillText(text, x + 1, y + 1, TILE_WIDTH - 2)
}

const CanvasTile = memo(function CanvasTile({ index }: { index: number }): ReactNode {
  const result = useWindow(WINDOW_ID, keys[index] as string, 0)
  countRender(index)
  const text = result === undefined ? '…' : result.mean.toFixed(1)
  useLayoutEffect(() => paintTile(index, text), [index, text])
  return null
})

function Grid(): ReactNode {
  const Tile = VIEW === 'canvas' ? CanvasTile : TextTile
  return keys.map((key, index) => <Tile key={key} index={index} />)
}

// Frame intervals, from requestAnimationFrame timestamps.
let lastRaf = -1
let measuredFrames = 0
const intervals: number[] = []
function onFrame(now: number): void {
  if (measuring) {
    measuredFrames++
    if (lastRaf >= 0) intervals.push(now - lastRaf)
  }
  lastRaf = now
  requestAnimationFrame(onFrame)
}

// Long tasks.
const longTaskSupported = PerformanceObserver.supportedEntryTypes.includes('longtask')
const longTasks: PerformanceEntry[] = []
if (longTaskSupported) {
  new PerformanceObserver((list) => {
    longTasks.push(...list.getEntries())
  }).observe({ type: 'longtask', buffered: true })
}

// The network: a timer notes which events are due and hands them over as
// messages of at most MESSAGE events, each its own task (as a socket would),
// so a backlog after a busy stretch arrives as many small tasks between which
// the browser can render a frame, not as one burst.
const ingestTimes: number[] = []
let measureStart = 0
let queued = 0
let ingested = 0
const network = new MessageChannel()
network.port1.onmessage = (message: MessageEvent<number>) => {
  const end = message.data
  const batch = events.slice(ingested, end)
  ingested = end
  const t0 = performance.now()
  if (floor === null) engine.ingest(batch)
  else floor.ingest(batch)
  const t1 = performance.now()
  if (!measuring) return
  ingestTimes.push(t1 - t0)
  spans.ingest.push(t0, t1)
}

function deliverDue(): void {
  const due = Math.min(total, Math.floor(((performance.now() - measureStart) * RATE) / 1000))
  while (queued < due) {
    queued = Math.min(due, queued + MESSAGE)
    network.port2.postMessage(queued)
  }
}

let floor: ReturnType<typeof startFloor> | null = null

/** The floor's tiles: text nodes in spans, or canvas cells; each shown once, like a mounted tile. */
function mountFloor(root: HTMLElement): void {
  const texts: Text[] = []
  if (!ON_CANVAS) {
    for (let i = 0; i < COMPONENTS; i++) {
      const text = document.createTextNode('…')
      root.appendChild(document.createElement('span')).appendChild(text)
      texts.push(text)
    }
  }
  const paint = ON_CANVAS
    ? paintTile
    : (index: number, text: string): void => {
        ;(texts[index] as Text).nodeValue = text
      }
  for (let i = 0; i < COMPONENTS; i++) {
    paint(i, '…')
    countRender(i)
  }
  floor = startFloor({ keys, paint, countRender })
}

const nextFrame = (): Promise<number> => new Promise((resolve) => requestAnimationFrame(resolve))

async function main(): Promise<void> {
  const root = document.getElementById('root')
  if (root === null) throw new Error('no #root')
  if (ON_CANVAS) {
    if (context === null) throw new Error('no 2d canvas context')
    context.font = '10px monospace'
    context.textBaseline = 'top'
    root.before(canvas)
  }
  if (FLOOR) mountFloor(root)
  else {
    createRoot(root).render(
      <EngineProvider engine={engine} scheduler={scheduler}>
        <Grid />
      </EngineProvider>,
    )
  }
  requestAnimationFrame(onFrame)
  for (let i = 0; i < 10; i++) await nextFrame()
  if (totalRenders < COMPONENTS) throw new Error(`mounted ${totalRenders} of ${COMPONENTS} tiles`)

  performance.mark('run:start')
  measureStart = performance.now()
  lastRaf = -1
  measuring = true
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      deliverDue()
      if (ingested >= total) {
        clearInterval(timer)
        resolve()
      }
    }, TICK_MS)
  })
  // The frame that shows the last batch.
  await nextFrame()
  await nextFrame()
  measuring = false
  const measureEnd = performance.now()
  performance.mark('run:end')
  await new Promise((resolve) => setTimeout(resolve, 100))

  const runMs = measureEnd - measureStart
  const inRun = longTasks.filter((t) => t.startTime >= measureStart && t.startTime <= measureEnd)
  window.__result = {
    view: VIEW,
    components: COMPONENTS,
    events: ingested,
    targetRate: RATE,
    runMs,
    eventsPerSecond: Math.round((ingested / runMs) * 1000),
    frames: measuredFrames,
    frameIntervalMs: percentiles(intervals),
    fanOutMs: percentiles(fanOutTimes),
    reactMs: percentiles(reactTimes),
    feedFrames: fanOutTimes.length,
    ingestCallMs: percentiles(ingestTimes),
    ingestCalls: ingestTimes.length,
    ingestTotalMs: ingestTimes.reduce((s, t) => s + t, 0),
    spans,
    maxRendersPerComponentPerFrame: maxPerFrame,
    meanRendersPerRenderingFrame: renderingPairs === 0 ? 0 : measuredRenders / renderingPairs,
    meanRendersPerComponentPerFrame: measuredRenders / (COMPONENTS * Math.max(1, measuredFrames)),
    measuredRenders,
    longTasks: inRun.length,
    longTaskTotalMs: inRun.reduce((s, t) => s + t.duration, 0),
    longTaskMaxMs: inRun.reduce((m, t) => Math.max(m, t.duration), 0),
    longTaskSupported,
    windowsWithValue: floor === null ? engine.results({ window: WINDOW_ID }).length : floor.keysWithValue,
  }
}

main().catch((error: unknown) => {
  window.__error = error instanceof Error ? (error.stack ?? error.message) : String(error)
})
