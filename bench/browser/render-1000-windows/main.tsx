/**
 * The page of bench/browser/render-1000-windows.ts: 1,000 `useWindow` cells
 * under one `EngineProvider`, while events arrive at 20k/s for 10 s. Query
 * parameters `components`, `rate` (events/s) and `seconds` change the load.
 * Leaves a `PageResult` on `window.__result`, or a message on `window.__error`.
 */
import { createEngine, type StreamEvent, tumbling } from '@tidemark/engine'
import { createFrameScheduler, EngineProvider, useWindow } from '@tidemark/react'
import { memo, type ReactNode } from 'react'
import { createRoot } from 'react-dom/client'
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
const TICK_MS = 10
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

// Events are made before the run so the measured ticks hold only ingest and
// rendering. Event time follows the schedule (ms since the start), all inside
// the first hour, so each key has one open window that every event of the key
// updates (a `provisional` change), and nothing is late.
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
const scheduler = createFrameScheduler()

// Renders, keyed by the frame counter of the rAF loop below.
let frame = 0
const lastFrame = new Int32Array(COMPONENTS).fill(-1)
const inFrame = new Int32Array(COMPONENTS)
let maxPerFrame = 0
let totalRenders = 0
let renderingPairs = 0
let measuredRenders = 0

function countRender(index: number): void {
  totalRenders++
  if (measuring) measuredRenders++
  if (lastFrame[index] === frame) {
    const n = (inFrame[index] as number) + 1
    inFrame[index] = n
    if (n > maxPerFrame) maxPerFrame = n
  } else {
    lastFrame[index] = frame
    inFrame[index] = 1
    if (maxPerFrame === 0) maxPerFrame = 1
    if (measuring) renderingPairs++
  }
}

const Cell = memo(function Cell({ index }: { index: number }): ReactNode {
  const result = useWindow(WINDOW_ID, keys[index] as string, 0)
  countRender(index)
  return <span>{result === undefined ? '…' : result.mean.toFixed(1)}</span>
})

function Grid(): ReactNode {
  return keys.map((key, index) => <Cell key={key} index={index} />)
}

// Frame times.
let measuring = false
let measureStart = 0
let measureEnd = 0
let lastRaf = -1
let measuredFrames = 0
const intervals: number[] = []
const frameWork: number[] = []
const channel = new MessageChannel()
let pendingFrameStart = -1
channel.port1.onmessage = () => {
  if (pendingFrameStart >= 0) frameWork.push(performance.now() - pendingFrameStart)
  pendingFrameStart = -1
}

function onFrame(now: number): void {
  frame++
  if (measuring) {
    measuredFrames++
    if (lastRaf >= 0) intervals.push(now - lastRaf)
    // A message posted now is handled in the first task after this frame's
    // rendering step (all rAF callbacks, React's commit, style, layout, paint).
    if (pendingFrameStart < 0) {
      pendingFrameStart = now
      channel.port2.postMessage(0)
    }
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

// Ingest.
const ingestTimes: number[] = []
let sent = 0

function ingestDue(): void {
  const due = Math.min(total, Math.floor(((performance.now() - measureStart) * RATE) / 1000))
  if (due <= sent) return
  const batch = events.slice(sent, due)
  sent = due
  const t0 = performance.now()
  engine.ingest(batch)
  ingestTimes.push(performance.now() - t0)
}

const nextFrame = (): Promise<number> => new Promise((resolve) => requestAnimationFrame(resolve))

async function main(): Promise<void> {
  const root = document.getElementById('root')
  if (root === null) throw new Error('no #root')
  createRoot(root).render(
    <EngineProvider engine={engine} scheduler={scheduler}>
      <Grid />
    </EngineProvider>,
  )
  requestAnimationFrame(onFrame)
  for (let i = 0; i < 10; i++) await nextFrame()
  if (totalRenders < COMPONENTS) throw new Error(`mounted ${totalRenders} of ${COMPONENTS} cells`)

  measureStart = performance.now()
  lastRaf = -1
  measuring = true
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      ingestDue()
      if (sent >= total) {
        clearInterval(timer)
        resolve()
      }
    }, TICK_MS)
  })
  // The frame that shows the last batch.
  await nextFrame()
  await nextFrame()
  measuring = false
  measureEnd = performance.now()
  await new Promise((resolve) => setTimeout(resolve, 100))

  const ingestMs = measureEnd - measureStart
  const inRun = longTasks.filter((t) => t.startTime >= measureStart && t.startTime <= measureEnd)
  const intervalStats = percentiles(intervals)
  const windowsWithValue = engine.results({ window: WINDOW_ID }).length
  window.__result = {
    components: COMPONENTS,
    events: sent,
    ingestMs,
    eventsPerSecond: Math.round((sent / ingestMs) * 1000),
    frames: measuredFrames,
    frameIntervalMs: intervalStats,
    frameWorkMs: percentiles(frameWork),
    droppedFrames: intervals.filter((d) => d > intervalStats.p50 * 1.5).length,
    ingestCallMs: percentiles(ingestTimes),
    ingestCalls: ingestTimes.length,
    maxRendersPerComponentPerFrame: maxPerFrame,
    meanRendersPerRenderingFrame: renderingPairs === 0 ? 0 : measuredRenders / renderingPairs,
    meanRendersPerComponentPerFrame: measuredRenders / (COMPONENTS * Math.max(1, measuredFrames)),
    totalRenders,
    longTasks: inRun.length,
    longTaskTotalMs: inRun.reduce((s, t) => s + t.duration, 0),
    longTaskMaxMs: inRun.reduce((m, t) => Math.max(m, t.duration), 0),
    longTaskSupported,
    windowsWithValue,
  }
}

main().catch((error: unknown) => {
  window.__error = error instanceof Error ? (error.stack ?? error.message) : String(error)
})
