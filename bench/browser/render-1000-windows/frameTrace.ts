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

interface TraceEvent {
  readonly name: string
  readonly cat?: string
  readonly ph: string
  readonly pid: number
  readonly tid: number
  readonly ts: number
  readonly dur?: number
  readonly tdur?: number
  readonly id?: string
  readonly id2?: { readonly local?: string }
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

export interface FrameTrace {
  readonly frames: number
  /** The rendering-update task of each frame. */
  readonly renderingWallMs: Percentiles
  readonly renderingCpuMs: Percentiles
  /** The rendering update plus every task since the previous frame (ingest, GC). */
  readonly workWallMs: Percentiles
  readonly workCpuMs: Percentiles
  /** Engine ingest (the `tidemark:ingest` measures) per frame interval. */
  readonly ingestPerFrameMs: Percentiles
  /** Wall self time per phase within the rendering-update tasks. */
  readonly renderingPhaseMs: Readonly<Record<Phase, Percentiles>>
  /** Wall self time per phase over the whole run, by task kind. */
  readonly totalMs: {
    readonly rendering: Readonly<Record<Phase, number>>
    readonly between: Readonly<Record<Phase, number>>
    readonly ingest: number
    readonly fanOut: number
    readonly react: number
    readonly runWall: number
    readonly busyWall: number
  }
}

interface Task {
  readonly start: number
  readonly end: number
  readonly cpu: number
  frame: boolean
  readonly phases: Record<Phase, number>
}

const emptyPhases = (): Record<Phase, number> => ({ script: 0, style: 0, layout: 0, paint: 0, gc: 0, other: 0 })

export function analyzeTrace(events: readonly TraceEvent[]): FrameTrace {
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
    tasks.push({ start: e.ts, end: e.ts + (e.dur ?? 0), cpu: e.tdur ?? e.dur ?? 0, frame: false, phases: emptyPhases() })
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
  }
  let stack: Open[] = []
  let current: Task | undefined
  const close = (until: number): void => {
    while (stack.length > 0 && (stack[stack.length - 1] as Open).end <= until) {
      const done = stack.pop() as Open
      if (current !== undefined) current.phases[done.phase] += done.self
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
    const parent = stack[stack.length - 1]
    if (parent !== undefined) parent.self -= dur
    stack.push({ end: e.ts + dur, phase: phaseOf[e.name] ?? parent?.phase ?? 'other', self: dur })
  }
  close(Number.POSITIVE_INFINITY)
  for (const task of tasks) {
    const charged = PHASES.reduce((s, p) => s + task.phases[p], 0)
    task.phases.other += task.end - task.start - charged
  }

  // The page's measures: async begin/end pairs on the same thread.
  const measures = new Map<string, { start: number; end: number }[]>()
  const open = new Map<string, number>()
  for (const e of marks) {
    if (e.pid !== pid || e.ts < from || e.ts > to) continue
    const id = `${e.name}\u0000${e.id ?? e.id2?.local ?? ''}`
    if (e.ph === 'b') open.set(id, e.ts)
    else if (e.ph === 'e') {
      const start = open.get(id)
      if (start === undefined) continue
      open.delete(id)
      const list = measures.get(e.name) ?? []
      list.push({ start, end: e.ts })
      measures.set(e.name, list)
    }
  }
  const sumOf = (name: string): number => (measures.get(name) ?? []).reduce((s, m) => s + m.end - m.start, 0)

  const ms = (us: number): number => us / 1000
  const rendering: Record<Phase, number> = emptyPhases()
  const between: Record<Phase, number> = emptyPhases()
  const renderingWall: number[] = []
  const renderingCpu: number[] = []
  const workWall: number[] = []
  const workCpu: number[] = []
  const ingestPerFrame: number[] = []
  const phasePerFrame: Record<Phase, number[]> = { script: [], style: [], layout: [], paint: [], gc: [], other: [] }
  const ingests = (measures.get('tidemark:ingest') ?? []).slice().sort((a, b) => a.start - b.start)
  let ingestIndex = 0
  let sinceWall = 0
  let sinceCpu = 0
  let busy = 0
  for (const task of tasks) {
    busy += task.end - task.start
    sinceWall += task.end - task.start
    sinceCpu += task.cpu
    for (const p of PHASES) (task.frame ? rendering : between)[p] += task.phases[p]
    if (!task.frame) continue
    renderingWall.push(ms(task.end - task.start))
    renderingCpu.push(ms(task.cpu))
    for (const p of PHASES) phasePerFrame[p].push(ms(task.phases[p]))
    workWall.push(ms(sinceWall))
    workCpu.push(ms(sinceCpu))
    let ingest = 0
    while (ingestIndex < ingests.length && (ingests[ingestIndex] as { start: number }).start < task.end) {
      const m = ingests[ingestIndex] as { start: number; end: number }
      ingest += m.end - m.start
      ingestIndex++
    }
    ingestPerFrame.push(ms(ingest))
    sinceWall = 0
    sinceCpu = 0
  }
  const toMs = (r: Record<Phase, number>): Record<Phase, number> =>
    Object.fromEntries(PHASES.map((p) => [p, ms(r[p])])) as Record<Phase, number>
  return {
    frames: renderingWall.length,
    renderingWallMs: percentiles(renderingWall),
    renderingCpuMs: percentiles(renderingCpu),
    workWallMs: percentiles(workWall),
    workCpuMs: percentiles(workCpu),
    ingestPerFrameMs: percentiles(ingestPerFrame),
    renderingPhaseMs: Object.fromEntries(PHASES.map((p) => [p, percentiles(phasePerFrame[p])])) as Record<
      Phase,
      Percentiles
    >,
    totalMs: {
      rendering: toMs(rendering),
      between: toMs(between),
      ingest: ms(sumOf('tidemark:ingest')),
      fanOut: ms(sumOf('tidemark:fan-out')),
      react: ms(sumOf('react:render-commit')),
      runWall: ms(to - from),
      busyWall: ms(busy),
    },
  }
}
