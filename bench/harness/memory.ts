/**
 * Memory visibility for one run: heap at start, end and peak, RSS peak, GC count and pause,
 * and the heap still retained after a forced GC while the run's state is alive.
 *
 * Runs are synchronous, so the heap is sampled from inside the run: every contender calls
 * `probe.tick()` once per batch and the sampler reads `process.memoryUsage()` every few ticks.
 * GC entries arrive through a PerformanceObserver, which delivers them only after the run yields.
 */
import { PerformanceObserver } from 'node:perf_hooks'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/** Called once per batch by every contender; a no-op outside memory runs. */
export interface HeapProbe {
  tick(): void
}

export const NO_PROBE: HeapProbe = { tick() {} }

const MB = 1024 * 1024

/**
 * Memory the engine's state can hold: the JS heap plus ArrayBuffer memory, where cells kept as
 * numbers live (outside the heap, so `heapUsed` alone would not see them).
 */
function used(m: NodeJS.MemoryUsage = process.memoryUsage()): number {
  return m.heapUsed + m.arrayBuffers
}

export interface MemoryFigures {
  /** Heap used (`heapUsed + arrayBuffers`) after a forced GC, before the run. */
  readonly heapStartMB: number
  /** Heap used when the run returned, before any GC. */
  readonly heapEndMB: number
  /** Largest sampled heap used during the run. */
  readonly heapPeakMB: number
  /** Largest sampled RSS during the run (RSS rarely shrinks: earlier runs in the process raise it). */
  readonly rssPeakMB: number
  readonly gcCount: number
  readonly gcPauseMs: number
  /** Heap used after a forced GC with the run's state still alive, minus `heapStartMB`. */
  readonly retainedMB: number
  readonly samples: number
}

class HeapSampler implements HeapProbe {
  readonly #every: number
  #ticks = 0
  heapPeak = 0
  rssPeak = 0
  samples = 0

  constructor(every: number) {
    this.#every = Math.max(1, every)
  }

  tick(): void {
    if (++this.#ticks % this.#every === 0) this.sample()
  }

  sample(): void {
    const m = process.memoryUsage()
    if (used(m) > this.heapPeak) this.heapPeak = used(m)
    if (m.rss > this.rssPeak) this.rssPeak = m.rss
    this.samples++
  }
}

let gcFunction: (() => void) | null = null

/** A full, synchronous GC. Works without `--expose-gc` too (the flag is set at run time), but run-all passes it. */
export function forceGc(): void {
  if (gcFunction === null) {
    const exposed = (globalThis as { gc?: () => void }).gc
    if (typeof exposed === 'function') gcFunction = exposed
    else {
      setFlagsFromString('--expose-gc')
      gcFunction = runInNewContext('gc') as () => void
    }
  }
  gcFunction()
  gcFunction()
}

/**
 * Untimed, before a timed run when `--forced-gc` asks for it: a full GC, so no run pays for the
 * previous run's garbage, then a pause for the work it leaves on V8's background threads
 * (concurrent sweeping), which CPU time would otherwise charge to the run.
 */
export async function settleHeap(): Promise<void> {
  forceGc()
  await new Promise((resolve) => setTimeout(resolve, 40))
}

/** Lets queued PerformanceObserver entries arrive (they are delivered on a timer, not synchronously). */
function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0)).then(() => new Promise((resolve) => setTimeout(resolve, 0)))
}

/**
 * Runs `run` once under observation. `samplesPerRun` spreads heap samples over the batches.
 * `run` returns the state to keep alive; it stays referenced until the retained heap is read.
 */
export async function measureMemory<T>(
  batches: number,
  run: (probe: HeapProbe) => T,
  samplesPerRun = 400,
): Promise<{ memory: MemoryFigures; state: T }> {
  // Let earlier runs' pending promises and timers finish first, so their garbage is collectable.
  await settle()
  forceGc()
  const start = used()
  let gcCount = 0
  let gcPause = 0
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gcCount++
      gcPause += entry.duration
    }
  })
  observer.observe({ entryTypes: ['gc'] })
  const sampler = new HeapSampler(Math.floor(batches / samplesPerRun))
  sampler.sample()
  const state = run(sampler)
  sampler.sample()
  const end = used()
  await settle()
  observer.disconnect()
  forceGc()
  const retained = used() - start
  return {
    memory: {
      heapStartMB: mb(start),
      heapEndMB: mb(end),
      heapPeakMB: mb(sampler.heapPeak),
      rssPeakMB: mb(sampler.rssPeak),
      gcCount,
      gcPauseMs: Number(gcPause.toFixed(1)),
      retainedMB: mb(retained),
      samples: sampler.samples,
    },
    state,
  }
}

/** Heap retained by what `build` returns, measured with forced GCs around it. */
export function retainedBy(build: () => unknown): { bytes: number; kept: unknown } {
  forceGc()
  const before = used()
  const kept = build()
  forceGc()
  return { bytes: used() - before, kept }
}

export function mb(bytes: number): number {
  return Number((bytes / MB).toFixed(2))
}
