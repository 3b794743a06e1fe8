/**
 * Reads a Chrome trace of a render-1000-windows run and says what each frame's
 * main-thread time consisted of. Runs in Node, on the trace Playwright wrote.
 *
 * A frame is a `ProxyMain::BeginMainFrame` task on the page's main thread (the
 * rendering update: rAF callbacks with the bindings' fan-out, React's render
 * and commit in the microtask after them, then style, layout, paint, commit).
 * "Work per frame" adds every other task that ran since the previous frame
 * (the ingest messages, GC): all the main-thread time one frame interval had
 * to absorb. Both are given in wall time (what the page saw) and thread CPU
 * time (`tdur`; without the time the thread sat descheduled on a busy
 * machine).
 *
 * Self time is attributed to the innermost categorised event, so GC inside a
 * script is GC, not script.
 */
import { type Percentiles, percentiles } from './result.ts'

/** A complete (`X`) or instant event of a Chrome trace, as the bench's trace readers read them. */
export interface TraceEvent {
  readonly name: string
  readonly cat?: string
  readonly ph: string
  readonly pid: number
  readonly tid: number
  readonly ts: number
  readonly dur?: number
  readonly tdur?: number
  readonly args?: { readonly data?: { readonly startTime?: number } }
}

/** Trace categories the analysis needs (light enough to leave on for every run). */
export const TRACE_CATEGORIES = [
  'toplevel',
  'benchmark',
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'blink.user_timing',
  'v8.execute',
]

export type Phase = 'script' | 'style' | 'layout' | 'paint' | 'gc' | 'other'
export const PHASES: readonly Phase[] = ['script', 'style', 'layout', 'paint', 'gc', 'other']

const phaseOf: Readonly<Record<string, Phase>> = {
  FireAnimationFrame: 'script',
  FunctionCall: 'script',
  RunMicrotasks: 'script',
  EventDispatch: 'script',
  TimerFire: 'script',
  EvaluateScript: 'script',
  'v8.callFunction': 'script',
  UpdateLayoutTree: 'style',
  RecalculateStyles: 'style',
  Layout: 'layout',
  PrePaint: 'paint',
  Paint: 'paint',
  Layerize: 'paint',
  Commit: 'paint',
  UpdateLayer: 'paint',
  MinorGC: 'gc',
  MajorGC: 'gc',
  BlinkGC: 'gc',
}

/** Wall time (what the page saw) and thread CPU time (without time the thread sat descheduled). */
export interface WallCpu<T> {
  readonly wall: T
  readonly cpu: T
}

export interface FrameTrace {
  readonly frames: number
  /** Per frame: the rendering update plus every task since the previous frame (ingest, GC). */
  readonly work: WallCpu<Percentiles>
  /** Per frame: the rendering-update task alone. */
  readonly rendering: WallCpu<Percentiles>
  /** Per frame: self time of each phase within the rendering update. */
  readonly renderingPhases: Readonly<Record<Phase, WallCpu<Percentiles>>>
  /** Per frame: the tasks that ingested since the previous frame (`engine.ingest` and its message dispatch). */
  readonly ingest: WallCpu<Percentiles>
  /** Whole run, ms. */
  readonly totals: {
    readonly runWall: number
    readonly busy: WallCpu<number>
    /** Self time per phase within rendering updates. */
    readonly rendering: WallCpu<Readonly<Record<Phase, number>>>
    /** Tasks between frames. */
    readonly ingestTasks: WallCpu<number>
    readonly otherTasks: WallCpu<number>
    /** Inside `engine.ingest` calls, the bindings' fan-out, and React after it (the page's spans; wall). */
    readonly engineIngest: number
    readonly fanOut: number
    readonly react: number
  }
}

interface Task {
  readonly start: number
  readonly end: number
  readonly cpu: number
  frame: boolean
  /** Holds a `tidemark:ingest` measure. */
  ingest: boolean
  /** Self time per phase: wall and thread CPU. */
  readonly phases: Record<Phase, number>
  readonly phasesCpu: Record<Phase, number>
}

const emptyPhases = (): Record<Phase, number> => ({ script: 0, style: 0, layout: 0, paint: 0, gc: 0, other: 0 })

/** The page's spans (`performance.now()` start and end pairs, flat), by what they timed. */
export interface PageSpans {
  readonly ingest: readonly number[]
  readonly fanOut: readonly number[]
  readonly react: readonly number[]
}

export function analyzeTrace(events: readonly TraceEvent[], spans: PageSpans): FrameTrace {
  const marks = events.filter((e) => e.cat?.includes('blink.user_timing') === true)
  const runStart = marks.find((e) => e.name === 'run:start')
  const runEnd = marks.find((e) => e.name === 'run:end')
  if (runStart === undefined || runEnd === undefined) throw new Error('trace has no run:start/run:end marks')
  const { pid, tid } = runStart
  const from = runStart.ts
  const to = runEnd.ts
  const onThread = events.filter((e) => e.pid === pid && e.tid === tid && e.ph === 'X' && e.ts >= from && e.ts <= to)

  const tasks: Task[] = []
  for (const e of onThread) {
    if (e.name !== 'ThreadControllerImpl::RunTask') continue
    const last = tasks[tasks.length - 1]
    if (last !== undefined && e.ts < last.end) continue // nested run loop
    tasks.push({
      start: e.ts,
      end: e.ts + (e.dur ?? 0),
      cpu: e.tdur ?? e.dur ?? 0,
      frame: false,
      ingest: false,
      phases: emptyPhases(),
      phasesCpu: emptyPhases(),
    })
  }
  const taskAt = (ts: number): Task | undefined => {
    let lo = 0
    let hi = tasks.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      const t = tasks[mid] as Task
      if (ts < t.start) hi = mid - 1
      else if (ts >= t.end) lo = mid + 1
      else return t
    }
    return undefined
  }

  // Self time per phase: walk each task's events as a tree (sorted by start,
  // longer first), charging each event's time minus its children's to its
  // phase, or to its parent's phase when it has none.
  const inside = onThread
    .filter((e) => e.name !== 'ThreadControllerImpl::RunTask')
    .sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0))
  interface Open {
    readonly end: number
    readonly phase: Phase
    self: number
    selfCpu: number
  }
  let stack: Open[] = []
  let current: Task | undefined
  const close = (until: number): void => {
    while (stack.length > 0 && (stack[stack.length - 1] as Open).end <= until) {
      const done = stack.pop() as Open
      if (current === undefined) continue
      current.phases[done.phase] += done.self
      current.phasesCpu[done.phase] += done.selfCpu
    }
  }
  for (const e of inside) {
    const task = taskAt(e.ts)
    if (task !== current) {
      close(Number.POSITIVE_INFINITY)
      stack = []
      current = task
    }
    if (task === undefined) continue
    if (e.name === 'ProxyMain::BeginMainFrame') task.frame = true
    close(e.ts)
    const dur = Math.min(e.dur ?? 0, task.end - e.ts)
    const cpu = Math.min(e.tdur ?? dur, dur)
    const parent = stack[stack.length - 1]
    if (parent !== undefined) {
      parent.self -= dur
      parent.selfCpu -= cpu
    }
    stack.push({ end: e.ts + dur, phase: phaseOf[e.name] ?? parent?.phase ?? 'other', self: dur, selfCpu: cpu })
  }
  close(Number.POSITIVE_INFINITY)
  for (const task of tasks) {
    task.phases.other += task.end - task.start - PHASES.reduce((s, p) => s + task.phases[p], 0)
    task.phasesCpu.other += task.cpu - PHASES.reduce((s, p) => s + task.phasesCpu[p], 0)
  }

  // The page's spans, moved onto the trace clock: the run:start mark has both times.
  const origin = from - (runStart.args?.data?.startTime ?? Number.NaN) * 1000
  if (Number.isNaN(origin)) throw new Error('run:start mark has no startTime')
  const onTrace = (flat: readonly number[]): { start: number; end: number }[] => {
    const list: { start: number; end: number }[] = []
    for (let i = 0; i + 1 < flat.length; i += 2) {
      list.push({ start: origin + (flat[i] as number) * 1000, end: origin + (flat[i + 1] as number) * 1000 })
    }
    return list
  }
  const measures = new Map([
    ['tidemark:ingest', onTrace(spans.ingest)],
    ['tidemark:fan-out', onTrace(spans.fanOut)],
    ['react:render-commit', onTrace(spans.react)],
  ])
  const sumOf = (name: string): number => (measures.get(name) ?? []).reduce((s, m) => s + m.end - m.start, 0)
  for (const m of measures.get('tidemark:ingest') ?? []) {
    const task = taskAt(m.start)
    if (task !== undefined && !task.frame) task.ingest = true
  }

  const ms = (us: number): number => us / 1000
  const series = (): WallCpu<number[]> => ({ wall: [], cpu: [] })
  const work = series()
  const rendering = series()
  const ingest = series()
  const phases = Object.fromEntries(PHASES.map((p) => [p, series()])) as Record<Phase, WallCpu<number[]>>
  const renderingTotal = { wall: emptyPhases(), cpu: emptyPhases() }
  const ingestTasks = { wall: 0, cpu: 0 }
  const otherTasks = { wall: 0, cpu: 0 }
  const busy = { wall: 0, cpu: 0 }
  const since = { wall: 0, cpu: 0 }
  const sinceIngest = { wall: 0, cpu: 0 }
  for (const task of tasks) {
    const wall = task.end - task.start
    busy.wall += wall
    busy.cpu += task.cpu
    since.wall += wall
    since.cpu += task.cpu
    if (!task.frame) {
      const bucket = task.ingest ? ingestTasks : otherTasks
      bucket.wall += wall
      bucket.cpu += task.cpu
      if (task.ingest) {
        sinceIngest.wall += wall
        sinceIngest.cpu += task.cpu
      }
      continue
    }
    for (const p of PHASES) {
      renderingTotal.wall[p] += task.phases[p]
      renderingTotal.cpu[p] += task.phasesCpu[p]
      phases[p].wall.push(ms(task.phases[p]))
      phases[p].cpu.push(ms(task.phasesCpu[p]))
    }
    rendering.wall.push(ms(wall))
    rendering.cpu.push(ms(task.cpu))
    work.wall.push(ms(since.wall))
    work.cpu.push(ms(since.cpu))
    ingest.wall.push(ms(sinceIngest.wall))
    ingest.cpu.push(ms(sinceIngest.cpu))
    since.wall = since.cpu = sinceIngest.wall = sinceIngest.cpu = 0
  }
  const summary = (v: WallCpu<number[]>): WallCpu<Percentiles> => ({ wall: percentiles(v.wall), cpu: percentiles(v.cpu) })
  const toMs = (r: Record<Phase, number>): Record<Phase, number> =>
    Object.fromEntries(PHASES.map((p) => [p, ms(r[p])])) as Record<Phase, number>
  const totalMs = (v: { wall: number; cpu: number }): WallCpu<number> => ({ wall: ms(v.wall), cpu: ms(v.cpu) })
  return {
    frames: rendering.wall.length,
    work: summary(work),
    rendering: summary(rendering),
    renderingPhases: Object.fromEntries(PHASES.map((p) => [p, summary(phases[p])])) as Record<Phase, WallCpu<Percentiles>>,
    ingest: summary(ingest),
    totals: {
      runWall: ms(to - from),
      busy: totalMs(busy),
      rendering: { wall: toMs(renderingTotal.wall), cpu: toMs(renderingTotal.cpu) },
      ingestTasks: totalMs(ingestTasks),
      otherTasks: totalMs(otherTasks),
      engineIngest: ms(sumOf('tidemark:ingest')),
      fanOut: ms(sumOf('tidemark:fan-out')),
      react: ms(sumOf('react:render-commit')),
    },
  }
}
