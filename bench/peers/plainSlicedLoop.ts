/**
 * The floor of a sliding spec that shares slices: one pass folding each event into its key's
 * slice (`slide` long: nested Maps, key → slice ordinal → aggregate), then each window's value
 * combined from its `size / slide` slices once, at the end. The least work that yields every
 * window's aggregates with one update per event; no dedup, watermark, lateness or emission.
 */
import type { StreamEvent } from '@tidemark/engine'
import type { Contender, Outcome, RunContext } from '../harness/contender.ts'
import type { FixedWindow } from './fixedWindows.ts'

interface Aggregate {
  count: number
  sum: number
  min: number
  max: number
}

export function plainSlicedLoopContender(batches: readonly (readonly StreamEvent[])[], window: FixedWindow): Contender {
  return {
    name: 'plain-loop',
    label: 'plain loop floor over slices: nested Maps, count/sum/min/max per key and slice, each window combined from its slices once at the end',
    run: (context) => plainSlicedLoop(batches, window, context),
  }
}

function plainSlicedLoop(batches: readonly (readonly StreamEvent[])[], window: FixedWindow, { probe }: RunContext): Outcome {
  const byKey = new Map<string, Map<number, Aggregate>>()
  const { slide } = window
  const perWindow = window.size / slide
  let aggregated = 0
  for (const batch of batches) {
    for (let i = 0; i < batch.length; i++) {
      const event = batch[i] as StreamEvent
      const ts = event.ts
      const value = event.value
      if (!Number.isFinite(ts) || !Number.isFinite(value)) continue
      const key = event.key ?? ''
      aggregated++
      let slices = byKey.get(key)
      if (slices === undefined) {
        slices = new Map()
        byKey.set(key, slices)
      }
      const ordinal = Math.floor(ts / slide)
      let a = slices.get(ordinal)
      if (a === undefined) {
        a = { count: 0, sum: 0, min: value, max: value }
        slices.set(ordinal, a)
      }
      a.count++
      a.sum += value
      if (value < a.min) a.min = value
      if (value > a.max) a.max = value
    }
    probe.tick()
  }
  // Every window holding a slice, once: its slices combined.
  const windows = new Map<string, Map<number, Aggregate>>()
  for (const [key, slices] of byKey) {
    const out = new Map<number, Aggregate>()
    let lo = Number.POSITIVE_INFINITY
    let hi = Number.NEGATIVE_INFINITY
    for (const ordinal of slices.keys()) {
      if (ordinal < lo) lo = ordinal
      if (ordinal > hi) hi = ordinal
    }
    for (let last = lo; last < hi + perWindow; last++) {
      const w: Aggregate = { count: 0, sum: 0, min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY }
      for (let ordinal = last - perWindow + 1; ordinal <= last; ordinal++) {
        const a = slices.get(ordinal)
        if (a === undefined) continue
        w.count += a.count
        w.sum += a.sum
        if (a.min < w.min) w.min = a.min
        if (a.max > w.max) w.max = a.max
      }
      if (w.count > 0) out.set(last, w)
    }
    windows.set(key, out)
  }
  let windowCount = 0
  for (const out of windows.values()) windowCount += out.size
  return { end: { liveWindows: windowCount, pending: 0 }, counts: { aggregated }, state: windows }
}
