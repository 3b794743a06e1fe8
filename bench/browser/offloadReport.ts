/**
 * The figures of a worker-offload run (bench/browser/worker-offload.ts), their report, and the
 * record a full run leaves in bench/results.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { RESULTS_DIR } from '../harness/child.ts'
import { measuredRevision } from '../harness/revision.ts'
import type { TraceEvent } from './render-1000-windows/frameTrace.ts'
import type { OffloadResult } from './worker-offload/result.ts'

export type { TraceEvent }

/** Main-thread figures of one run, from the trace between the page's run:start and run:end marks. */
export interface MainThread {
  readonly runMs: number
  /** Task wall time per second of run, ms. */
  readonly busyMsPerSecond: number
  /** Task CPU time per second of run, ms. */
  readonly cpuMsPerSecond: number
  readonly longestTaskMs: number
  /** CPU time of the task with the most CPU time (without time the thread waited for a core). */
  readonly longestTaskCpuMs: number
  readonly tasksOver16ms: number
  readonly frameP50Ms: number
  readonly frameP95Ms: number
  readonly frameMaxMs: number
  readonly events: number
  readonly mode: string
}

export interface OffloadReport {
  readonly browser: string
  readonly loadAverage: readonly [number, number]
  readonly devices: readonly { readonly devices: number; readonly rate: number; readonly page: MainThread; readonly worker: MainThread }[]
  /**
   * The 10^6-event run: the page engine, the worker, and the control (no Tidemark code: the page
   * posts the batches to a worker that spends `spinMs`, the host's time per batch, on each).
   */
  readonly million: { readonly page: MainThread; readonly worker: MainThread; readonly control: MainThread & { readonly spinMs: number } } | null
  readonly memory: { readonly page: Heap; readonly worker: Heap } | null
  /** Leader takeovers: the leader closed, frozen (the page hears `freeze` first), frozen without the event. */
  readonly takeover: { readonly closeMs: readonly number[]; readonly freezeMs: readonly number[]; readonly silentFreezeMs: readonly number[] } | null
}

/** JS heap after a forced GC, MB, per target and in total. */
export interface Heap {
  readonly totalMB: number
  readonly targets: readonly { readonly type: string; readonly usedMB: number }[]
}

/** The `p` quantile of `values` (NaN for none). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number
}



/**
 * The main thread's figures of a traced run: its top-level tasks (`ThreadControllerImpl::RunTask`
 * on the thread of the page's `run:start` mark, between `run:start` and `run:end`; a task nested
 * in another's run loop is not counted twice) as busy wall time and CPU time per second of run,
 * the longest task and those over 16 ms; the frame intervals the page recorded.
 *
 * @example
 * const figures: MainThread = mainThread(traceEvents, window.__offloadResult)
 */
export function mainThread(events: readonly TraceEvent[], result: OffloadResult): MainThread {
  const start = events.find((e) => e.name === 'run:start' && e.cat?.includes('blink.user_timing') === true)
  const end = events.find((e) => e.name === 'run:end' && e.cat?.includes('blink.user_timing') === true)
  if (start === undefined || end === undefined) throw new Error('trace has no run:start/run:end marks')
  let busy = 0
  let cpu = 0
  let longest = 0
  let longestCpu = 0
  let over = 0
  let lastEnd = 0
  const tasks = events
    .filter((e) => e.pid === start.pid && e.tid === start.tid && e.ph === 'X' && e.name === 'ThreadControllerImpl::RunTask' && e.ts >= start.ts && e.ts <= end.ts)
    .sort((a, b) => a.ts - b.ts)
  for (const task of tasks) {
    if (task.ts < lastEnd) continue // a nested run loop
    const dur = (task.dur ?? 0) / 1000
    lastEnd = task.ts + (task.dur ?? 0)
    busy += dur
    const taskCpu = (task.tdur ?? task.dur ?? 0) / 1000
    cpu += taskCpu
    longest = Math.max(longest, dur)
    longestCpu = Math.max(longestCpu, taskCpu)
    if (dur > 16) over++
  }
  const seconds = (end.ts - start.ts) / 1e6
  return {
    runMs: result.runMs,
    busyMsPerSecond: busy / seconds,
    cpuMsPerSecond: cpu / seconds,
    longestTaskMs: longest,
    longestTaskCpuMs: longestCpu,
    tasksOver16ms: over,
    frameP50Ms: percentile(result.frameIntervals, 0.5),
    frameP95Ms: percentile(result.frameIntervals, 0.95),
    frameMaxMs: Math.max(0, ...result.frameIntervals),
    events: result.events,
    mode: result.mode,
  }
}

/** One frame at 60 Hz (16.67 ms), plus the 0.2 ms by which consecutive rAF timestamps of on-time frames differ. */
export const ONE_FRAME_MS = 1000 / 60 + 0.2

/**
 * Writes bench/results/worker-offload-latest.{md,json}: the report of a full run, with when and
 * what it measured.
 *
 * @example
 * writeLatest(await run())
 */
export function writeLatest(r: OffloadReport): void {
  const measured = measuredRevision(['packages/engine', 'packages/idb', 'packages/react', 'packages/worker', 'bench/browser'])
  const when = `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC · ${measured}`
  writeFileSync(join(RESULTS_DIR, 'worker-offload-latest.json'), `${JSON.stringify({ when, ...r }, null, 2)}\n`)
  writeFileSync(join(RESULTS_DIR, 'worker-offload-latest.md'), `# worker-offload: latest full run\n\n${when}\n\n\`\`\`\n${report(r)}\n\`\`\`\n`)
}

/**
 * The report of one run, as printed: per scenario the page engine against the worker, with the targets.
 *
 * @example
 * console.log(report(await run({ only: ['million'] })))
 */
export function report(r: OffloadReport): string {
  const f = (v: number, digits = 1): string => (Number.isFinite(v) ? v.toFixed(digits) : '–')
  const mark = (ok: boolean): string => (ok ? 'PASS' : 'FAIL')
  const line = (label: string, m: MainThread): string =>
    `    ${label.padEnd(7)} busy ${f(m.busyMsPerSecond)} ms/s (cpu ${f(m.cpuMsPerSecond)}), frames p50 ${f(m.frameP50Ms)} p95 ${f(m.frameP95Ms)} max ${f(m.frameMaxMs)} ms, longest task ${f(m.longestTaskMs)} ms (cpu ${f(m.longestTaskCpuMs)}; ${m.tasksOver16ms} over 16 ms), ${m.events} events in ${f(m.runMs / 1000, 2)} s [${m.mode}]`
  const lines = [`worker-offload (${r.browser}, headless, --disable-gpu; load average ${f(r.loadAverage[0])} → ${f(r.loadAverage[1])})`]
  for (const d of r.devices) {
    const ratio = d.worker.busyMsPerSecond / d.page.busyMsPerSecond
    const cpuRatio = d.worker.cpuMsPerSecond / d.page.cpuMsPerSecond
    lines.push(`  ${d.devices} devices, ${d.rate} readings/s each, a tile per device${d.rate === 0 ? ' (the floor: no reading arrives)' : ''}`, line('page', d.page), line('worker', d.worker))
    if (d.rate === 0) continue
    const targeted = d.devices === 200 && d.rate === 20
    lines.push(
      `    main-thread busy with the worker: ${f(ratio * 100, 0)}% of the page engine's (cpu ${f(cpuRatio * 100, 0)}%)` +
        (targeted ? ` [target <= 25%: ${mark(ratio <= 0.25)}]; p95 frame interval ${f(d.worker.frameP95Ms, 2)} ms [target <= 16.7 ms, one 60 Hz frame: ${mark(d.worker.frameP95Ms <= ONE_FRAME_MS)}]` : ''),
    )
    // The dashboard's own cost with no reading (the benchmark's frame recorder and the tiles' rendering) is paid in both modes.
    const floor = r.devices.find((x) => x.devices === d.devices && x.rate === 0)
    if (floor !== undefined) {
      const above = (m: MainThread, base: MainThread): number => m.busyMsPerSecond - base.busyMsPerSecond
      lines.push(`    above the floor of ${d.devices} tiles with no reading: worker ${f(above(d.worker, floor.worker))} ms/s, page ${f(above(d.page, floor.page))} ms/s (${f((above(d.worker, floor.worker) / above(d.page, floor.page)) * 100, 0)}%)`)
    }
  }
  if (r.million !== null) {
    const { page, worker, control } = r.million
    lines.push('  10^6 events ingested by the page in batches of 10,000', line('page', page), line('worker', worker), line('control', control))
    lines.push(
      `    longest main-thread task with the worker ${f(worker.longestTaskMs)} ms [target < 16 ms: ${mark(worker.longestTaskMs < 16)}], on the page ${f(page.longestTaskMs)} ms`,
      `    control, no Tidemark code (the page posts the same batches to a worker that spends ${f(control.spinMs, 0)} ms on each): longest task ${f(control.longestTaskMs)} ms (cpu ${f(control.longestTaskCpuMs)})`,
    )
  }
  if (r.memory !== null) {
    const heap = (h: Heap): string => `${f(h.totalMB)} MB (${h.targets.map((t) => `${t.type} ${f(t.usedMB)}`).join(', ')})`
    lines.push('  memory, four tabs, a minute of 200 devices (12,000 windows), JS heap after GC', `    page    ${heap(r.memory.page)}`, `    worker  ${heap(r.memory.worker)}`)
  }
  if (r.takeover !== null) {
    lines.push(
      '  leader takeover without SharedWorker, ms from the leader going to the other tabs welcomed by the next host',
      `    closed  ${r.takeover.closeMs.map((ms) => f(ms, 0)).join(', ')} (median ${f(percentile(r.takeover.closeMs, 0.5), 0)})`,
      `    frozen  ${r.takeover.freezeMs.map((ms) => f(ms, 0)).join(', ')} (median ${f(percentile(r.takeover.freezeMs, 0.5), 0)}), the page told of it (\`freeze\`): handed over`,
      `    frozen without the freeze event  ${r.takeover.silentFreezeMs.map((ms) => f(ms, 0)).join(', ')} (median ${f(percentile(r.takeover.silentFreezeMs, 0.5), 0)}): stolen after the heartbeats stop`,
    )
  }
  return lines.join('\n')
}
