import { addToCell, copyCell, emptyCell, mergeCell } from './cell.ts'
import type { CellEntry } from './replicaPort.ts'
import {
  ADMITTED_LATE,
  type BatchFrontiers,
  type MergeCounts,
  ON_TIME,
  REFUSED,
  type RemoteFrontiers,
  type WindowHooks,
  type WindowIndex,
} from './windowIndex.ts'
import { alignedStart } from './windowSpec.ts'
import { WindowState } from './windowState.ts'

/**
 * Tumbling and sliding windows: aligned starts every `slide` ms, each `size` long.
 * Per event: one map lookup for the key, one per window, one per cell.
 */
export class FixedWindowIndex implements WindowIndex {
  readonly id: string
  readonly maxNewPerEvent: number
  readonly #size: number
  readonly #slide: number
  /** key → start → window. A Map, so `__proto__` is an ordinary key. */
  readonly #byKey = new Map<string, Map<number, WindowState>>()
  #count = 0
  #last: WindowState | null = null

  constructor(id: string, size: number, slide: number) {
    this.id = id
    this.#size = size
    this.#slide = slide
    this.maxNewPerEvent = size / slide
  }

  get size(): number {
    return this.#count
  }

  missingWindows(key: string, ts: number, frontiers: BatchFrontiers): number {
    const series = this.#byKey.get(key)
    let missing = 0
    for (let start = alignedStart(ts, this.#slide); start > ts - this.#size; start -= this.#slide) {
      if (start + this.#size + frontiers.lateness <= frontiers.watermark) continue
      if (series?.get(start) === undefined) missing++
    }
    return missing
  }

  place(
    key: string,
    source: string,
    ts: number,
    value: number,
    version: number,
    frontiers: BatchFrontiers,
    hooks: WindowHooks,
  ): number {
    let series: Map<number, WindowState> | undefined
    let outcome = 0
    const size = this.#size
    for (let start = alignedStart(ts, this.#slide); start > ts - size; start -= this.#slide) {
      const end = start + size
      // Consecutive events mostly hit the window of the previous one: skip two map lookups.
      const last = this.#last
      let window: WindowState | undefined
      if (last !== null && last.start === start && last.key === key && last.live) window = last
      else {
        series ??= this.#byKey.get(key)
        window = series?.get(start)
      }
      if (window === undefined || window.final) {
        if (end + frontiers.lateness <= frontiers.watermark) {
          outcome |= REFUSED
          continue
        }
      }
      if (window === undefined) {
        window = new WindowState(this.id, key, start, end)
        // Created past the firing frontier: it can only be a late correction.
        window.fired = end <= frontiers.firing
        if (series === undefined) {
          series = new Map()
          this.#byKey.set(key, series)
        }
        series.set(start, window)
        this.#count++
        hooks.created(window)
      }
      this.#last = window
      let cell = window.cells.get(source)
      if (cell === undefined) {
        cell = emptyCell()
        window.cells.set(source, cell)
      }
      addToCell(cell, ts, value, version)
      hooks.written(window, source, start, cell)
      outcome |= window.fired ? ADMITTED_LATE : ON_TIME
      if (window.touchedIn !== frontiers.batch) {
        window.touchedIn = frontiers.batch
        hooks.touched(window)
      }
    }
    return outcome
  }

  mergeRemote(entries: readonly CellEntry[], frontiers: RemoteFrontiers, hooks: WindowHooks): MergeCounts {
    const counts: MergeCounts = { applied: 0, stale: 0, expired: 0, finalityViolations: 0, invalid: 0 }
    let lastKey: string | null = null
    let series: Map<number, WindowState> | undefined
    for (let i = 0; i < entries.length; i++) {
      const { address, cell } = entries[i] as CellEntry
      const { key, start, source } = address
      if (alignedStart(start, this.#slide) !== start) {
        counts.invalid++
        continue
      }
      if (key !== lastKey) {
        series = this.#byKey.get(key)
        lastKey = key
      }
      const end = start + this.#size
      let window = series?.get(start)
      if (window === undefined) {
        // Already left live state here: the value it would change is no longer shown.
        if (end + frontiers.lateness + frontiers.retention <= frontiers.watermark) {
          counts.expired++
          continue
        }
        if (series === undefined) {
          series = new Map()
          this.#byKey.set(key, series)
        }
        window = new WindowState(this.id, key, start, end)
        window.fired = end <= frontiers.firing
        series.set(start, window)
        this.#count++
        hooks.created(window)
      }
      const mine = window.cells.get(source)
      if (mine !== undefined && mergeCell(mine, cell) === mine) {
        counts.stale++
        continue
      }
      // A copy: the engine may later write this cell itself (a source it comes to own).
      window.cells.set(source, copyCell(cell))
      counts.applied++
      if (window.final || end + frontiers.lateness <= frontiers.watermark) counts.finalityViolations++
      if (window.touchedIn !== frontiers.batch) {
        window.touchedIn = frontiers.batch
        hooks.touched(window)
      }
    }
    return counts
  }

  adopt(window: WindowState): void {
    let series = this.#byKey.get(window.key)
    if (series === undefined) {
      series = new Map()
      this.#byKey.set(window.key, series)
    }
    if (!series.has(window.start)) this.#count++
    series.set(window.start, window)
  }

  snapshot(): null {
    return null
  }

  restore(): void {}

  find(key: string, start: number): WindowState | undefined {
    return this.#byKey.get(key)?.get(start)
  }

  remove(window: WindowState): void {
    const series = this.#byKey.get(window.key)
    if (series === undefined || series.get(window.start) !== window) return
    series.delete(window.start)
    if (series.size === 0) this.#byKey.delete(window.key)
    if (this.#last === window) this.#last = null
    window.live = false
    this.#count--
  }

  *windows(): IterableIterator<WindowState> {
    for (const series of this.#byKey.values()) yield* series.values()
  }

  horizon(frontiers: BatchFrontiers): number {
    return frontiers.watermark - frontiers.lateness - this.#size
  }
}
