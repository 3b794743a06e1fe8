/**
 * When a dashboard has seen a device's readings: its engine has merged them. A merge whose clock
 * moves a source's gap-free prefix past what the dashboard had is one arrival, once the engine's
 * own state confirms it (`nextSeq(source)`: its subscribers were notified in that call). Its
 * latency is the moment of the merge minus the clock's `prefixTs`, the `ts` of the newest
 * reading, stamped with `Date.now()` when the device recorded and sent it.
 */
import type { ClockEntry } from '@tidemark/engine'
import { METRIC_KEYS } from './fleetLayout.ts'

/**
 * One arrival: a device's readings merged by a dashboard's engine.
 *
 * @example
 * const arrival: Arrival = { source: 'fleet-00-d007', prefix: 42, latencies: [18] }
 */
export interface Arrival {
  readonly source: string
  readonly prefix: number
  /**
   * One latency per update the merge brought: the newest one's, and, when the merge brought
   * several updates of the device at once (its clock carries the newest `ts` only), each older
   * one a send period longer, as it was sent that much earlier.
   */
  readonly latencies: readonly number[]
}

/**
 * The arrivals `clocks` (a merge's) bring to a dashboard that had merged `seen` (source → gap-free
 * prefix; moved on for every arrival) at `now`; `nextSeq` is the dashboard engine's. Clocks whose
 * prefix the engine does not reflect count as `unconfirmed`, not as arrivals.
 *
 * @example
 * const { arrivals } = arrivalsOf(dashboard.seen, clocks, (source) => engine.nextSeq(source), Date.now(), 1_000)
 */
export function arrivalsOf(
  seen: Map<string, number>,
  clocks: readonly ClockEntry[],
  nextSeq: (source: string) => number,
  now: number,
  periodMs: number,
): { readonly arrivals: Arrival[]; readonly unconfirmed: number } {
  const arrivals: Arrival[] = []
  let unconfirmed = 0
  for (const clock of clocks) {
    const before = seen.get(clock.source) ?? 0
    if (clock.prefix <= before) continue
    // The engine's own state, not the doc's: the reading is in its windows now.
    if (nextSeq(clock.source) - 1 < clock.prefix) {
      unconfirmed++
      continue
    }
    seen.set(clock.source, clock.prefix)
    const latency = now - clock.prefixTs
    const updates = before > 0 ? Math.max(1, Math.round((clock.prefix - before) / METRIC_KEYS.length)) : 1
    arrivals.push({ source: clock.source, prefix: clock.prefix, latencies: Array.from({ length: updates }, (_, older) => latency + older * periodMs) })
  }
  return { arrivals, unconfirmed }
}
