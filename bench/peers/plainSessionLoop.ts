/**
 * The floor of session windows: one pass keeping, per key, its sessions in start order (each
 * `[first ts, last ts + gap)` with count/sum/min/max); an event joins every session its own
 * `[ts, ts + gap)` overlaps, merging them, or opens one. The key's latest session is tried
 * first, so a stream delivered in order costs one comparison per event. No dedup, watermark,
 * lateness or emission: it counts every finite reading, so it agrees with the engine only on a
 * workload whose readings are all admitted and none re-sent.
 */
import type { StreamEvent } from '@tidemark/engine'
import type { Contender, Outcome, RunContext, WindowTotals } from '../harness/contender.ts'
import { windowTotalId } from '../harness/contender.ts'

interface Session {
  start: number
  end: number
  count: number
  sum: number
  min: number
  max: number
}

export function plainSessionLoopContender(batches: readonly (readonly StreamEvent[])[], window: string, gap: number): Contender {
  return {
    name: 'plain-loop',
    label: 'plain loop floor over sessions: per key an array of sessions in start order, each reading joins or merges the sessions it reaches; no dedup, watermark or lateness',
    run: (context) => plainSessionLoop(batches, window, gap, context),
  }
}

function plainSessionLoop(batches: readonly (readonly StreamEvent[])[], window: string, gap: number, { probe, record }: RunContext): Outcome {
  const byKey = new Map<string, Session[]>()
  let aggregated = 0
  for (const batch of batches) {
    for (let i = 0; i < batch.length; i++) {
      const event = batch[i] as StreamEvent
      const ts = event.ts
      const value = event.value
      if (!Number.isFinite(ts) || !Number.isFinite(value)) continue
      const key = event.key ?? ''
      aggregated++
      let sessions = byKey.get(key)
      if (sessions === undefined) {
        sessions = []
        byKey.set(key, sessions)
      }
      const last = sessions[sessions.length - 1]
      if (last !== undefined && last.start <= ts && ts < last.end) {
        // Inside the latest session: its end moves with its latest reading.
        if (ts + gap > last.end) last.end = ts + gap
        add(last, value)
        continue
      }
      join(sessions, ts, gap, value)
    }
    probe.tick()
  }
  let windowCount = 0
  for (const sessions of byKey.values()) windowCount += sessions.length
  const outcome: Outcome = { end: { liveWindows: windowCount, pending: 0 }, counts: { aggregated }, state: byKey, watermark: Number.POSITIVE_INFINITY }
  if (!record) return outcome
  const totals: WindowTotals = new Map()
  for (const [key, sessions] of byKey) {
    for (const s of sessions) totals.set(windowTotalId(window, key, s.start), { end: s.end, count: s.count, sum: s.sum })
  }
  return { ...outcome, totals }
}

function add(s: Session, value: number): void {
  s.count++
  s.sum += value
  if (value < s.min) s.min = value
  if (value > s.max) s.max = value
}

/** Adds a reading that the latest session does not hold: merges the sessions `[ts, ts + gap)` overlaps, or opens one in start order. */
function join(sessions: Session[], ts: number, gap: number, value: number): void {
  // The first session ending after ts: the first that can overlap.
  let lo = 0
  let hi = sessions.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if ((sessions[mid] as Session).end > ts) hi = mid
    else lo = mid + 1
  }
  let to = lo
  while (to < sessions.length && (sessions[to] as Session).start < ts + gap) to++
  if (to === lo) {
    sessions.splice(lo, 0, { start: ts, end: ts + gap, count: 1, sum: value, min: value, max: value })
    return
  }
  const into = sessions[lo] as Session
  if (ts < into.start) into.start = ts
  if (ts + gap > into.end) into.end = ts + gap
  for (let i = lo + 1; i < to; i++) {
    const s = sessions[i] as Session
    into.count += s.count
    into.sum += s.sum
    if (s.min < into.min) into.min = s.min
    if (s.max > into.max) into.max = s.max
    if (s.end > into.end) into.end = s.end
  }
  add(into, value)
  if (to - lo > 1) sessions.splice(lo + 1, to - lo - 1)
}
