/**
 * Ground truth of a storm, computed in the driver from the readings every device reports it
 * produced (never from an engine's results): the window values every page must show once
 * everyone has synced, and checks that the late lanes hold exactly the events that were not
 * counted, each one really beyond lateness.
 */
import type { StreamEvent } from '@tidemark/engine'
import { type StormReading, stormReading } from '../contract/stormReading.ts'
import type { StormSnapshot } from '../contract/stormPageApi.ts'
import { windowDigest } from '../contract/windowDigest.ts'

/**
 * How an app's readings and window values look, for the driver to compute the truth.
 *
 * @example
 * const truth: StormTruth = tumblingTruth({ windowMs: 1_000, allowedLateness: 2_000 })
 * truth.digest([truth.reading(7, 'device-a1', 1)]) // 'tumbling:1000|k1|1700000000000|1|2'
 */
export interface StormTruth {
  /** Reading `seq` of `source` on a device page opened with `seed`: exactly what it ingested. */
  readonly reading: StormReading
  /** Canonical window values of `events`, in the format of the pages' `snapshot().digest` (`windowDigest`). */
  digest(events: readonly StreamEvent[]): string
  /**
   * Whether `event` may be beyond lateness on its device when that device's earlier readings
   * reach event time `maxTsBefore` (a necessary condition: the device's watermark is at most
   * the largest event time of its own earlier batches).
   */
  canBeLate(event: StreamEvent, maxTsBefore: number): boolean
  /**
   * The app's window spec ids (`tumbling:1000`, …) when it has more than one: the engine puts
   * an event on its late lane once per spec that refused it, and the other specs still count
   * it. Without it, an event on the late lane is counted nowhere.
   */
  readonly windows?: readonly string[]
}

/**
 * Truth for pages with one `tumbling(windowMs)` spec, `allowedLateness` and the default
 * watermark (`boundedOutOfOrderness(0)`); digest rows are `tumbling:<ms>|key|start|count|sum`.
 * `reading` defaults to `stormReading`.
 *
 * @example
 * const truth = tumblingTruth({ windowMs: 60_000, allowedLateness: 5_000, reading: myReading })
 * await runStorm({ ..., truth })
 */
export function tumblingTruth(options: { readonly windowMs: number; readonly allowedLateness: number; readonly reading?: StormReading }): StormTruth {
  const { windowMs, allowedLateness } = options
  if (!Number.isSafeInteger(windowMs) || windowMs <= 0) throw new RangeError(`tumblingTruth: windowMs must be a positive integer, got ${windowMs}`)
  if (!Number.isFinite(allowedLateness) || allowedLateness < 0) throw new RangeError(`tumblingTruth: allowedLateness must be a non-negative number of ms, got ${allowedLateness}`)
  const window = `tumbling:${windowMs}`
  const startOf = (ts: number): number => ts - (((ts % windowMs) + windowMs) % windowMs)
  return {
    reading: options.reading ?? stormReading,
    windows: [window],
    digest(events) {
      const cells = new Map<string, { window: string; key: string; start: number; count: number; sum: number }>()
      for (const event of events) {
        const key = event.key ?? ''
        const start = startOf(event.ts)
        const id = `${key}|${start}`
        const cell = cells.get(id) ?? { window, key, start, count: 0, sum: 0 }
        cell.count++
        cell.sum += event.value
        cells.set(id, cell)
      }
      return windowDigest(cells.values())
    },
    canBeLate: (event, maxTsBefore) => startOf(event.ts) + windowMs + allowedLateness <= maxTsBefore,
  }
}

/**
 * One device as the truth sees it: every seq it produced, and its late lane.
 *
 * @example
 * const outcome: DeviceOutcome = { source: 'device-a1', seed: 7, produced: 1_000, lateIds: ['device-a1#412'], firstBatchEnd: 20 }
 */
export interface DeviceOutcome {
  readonly source: string
  readonly seed: number
  /** It produced seqs `1..produced`. */
  readonly produced: number
  readonly lateIds: readonly string[]
  /** The window spec that refused each entry of `lateIds` (same order; `StormSnapshot.lateWindows`). */
  readonly lateWindows?: readonly string[]
  /** Late-lane entries the engine dropped by its bound (`limits.maxLateEvents`): their ids are unknown. */
  readonly lateTrimmed?: number
  /** Seqs up to this one came in its first batch, before it knew its own clock (not checked for lateness). */
  readonly firstBatchEnd: number
}

/**
 * A stopped device's outcome, from its snapshot; `firstBatchEnd`: the storm's batch size.
 *
 * @example
 * const outcomes = snapshots.map((snapshot) => deviceOutcome(snapshot, 20))
 */
export function deviceOutcome(snapshot: StormSnapshot, firstBatchEnd: number): DeviceOutcome {
  const { source, seed, produced, lateIds, lateWindows, lateLaneTrimmed } = snapshot
  return { source, seed, produced, lateIds, lateWindows, lateTrimmed: lateLaneTrimmed, firstBatchEnd }
}

/**
 * The ground truth of a storm: what every converged page must show.
 *
 * @example
 * const figures: TruthFigures = groundTruth(truth, outcomes)
 * expect(figures.counted + figures.lateLane).toBe(figures.produced)
 */
export interface TruthFigures {
  /** Readings produced over all devices. */
  readonly produced: number
  /** Readings counted by at least one window spec (with one spec: not on the late lane). */
  readonly counted: number
  /** Readings beyond lateness: refused by every window spec. */
  readonly lateLane: number
  /** Window values every converged page must show. */
  readonly digest: string
  readonly windows: number
  /** Late-lane entries that are not a produced reading of their device, appear twice, or cannot be beyond lateness. */
  readonly problems: readonly string[]
}

/**
 * Recomputes every reading the devices produced and the window values of those not on a
 * late lane.
 *
 * @example
 * const truth = groundTruth(tumblingTruth({ windowMs: 1_000, allowedLateness: 2_000 }), [{ source, seed, produced: 1_000, lateIds, firstBatchEnd: 10 }])
 * expect(dashboard.digest).toBe(truth.digest)
 */
export function groundTruth(truth: StormTruth, devices: readonly DeviceOutcome[]): TruthFigures {
  const counted: StreamEvent[] = []
  // Events some specs refused and others counted, with the specs that refused them.
  const partial: { event: StreamEvent; refused: ReadonlySet<string> }[] = []
  const problems: string[] = []
  const specs = truth.windows ?? []
  let produced = 0
  let lateLane = 0
  for (const device of devices) {
    if ((device.lateTrimmed ?? 0) > 0) {
      problems.push(`${device.source}: its engine dropped ${device.lateTrimmed} late-lane entries (limits.maxLateEvents): the truth cannot tell which readings it counted; raise limits.maxLateEvents`)
    }
    const late = new Map<string, Set<string>>()
    device.lateIds.forEach((id, i) => {
      const window = device.lateWindows?.[i] ?? ''
      const refused = late.get(id) ?? new Set<string>()
      if (refused.has(window)) problems.push(`${device.source}: ${id} is on the late lane twice`)
      refused.add(window)
      late.set(id, refused)
    })
    const seen = new Set<string>()
    let maxTsBefore = Number.NEGATIVE_INFINITY
    for (let seq = 1; seq <= device.produced; seq++) {
      const event = truth.reading(device.seed, device.source, seq)
      const refused = late.get(event.id)
      if (refused === undefined) counted.push(event)
      else {
        seen.add(event.id)
        // Beyond lateness when every spec refused it; with one spec (or none named), any entry is.
        if (specs.length < 2 || refused.has('') || specs.every((w) => refused.has(w))) lateLane++
        else {
          counted.push(event)
          partial.push({ event, refused })
        }
        if (seq > device.firstBatchEnd && !truth.canBeLate(event, maxTsBefore)) {
          problems.push(`${device.source}: ${event.id} (ts ${event.ts}) is on the late lane but its window is within lateness of the device's earlier readings (max ts ${maxTsBefore})`)
        }
      }
      maxTsBefore = Math.max(maxTsBefore, event.ts)
      produced++
    }
    for (const id of late.keys()) if (!seen.has(id)) problems.push(`${device.source}: late-lane entry ${id} is not a reading it produced`)
  }
  let digest = truth.digest(counted)
  if (partial.length > 0) {
    // Each spec that refused some of them shows the counted events but those.
    const rows = digest.split('\n').filter((row) => !specs.some((w) => row.startsWith(`${w}|`)))
    for (const w of specs) {
      const without = new Set(partial.filter((p) => p.refused.has(w)).map((p) => p.event))
      for (const row of truth.digest(counted.filter((e) => !without.has(e))).split('\n')) if (row.startsWith(`${w}|`)) rows.push(row)
    }
    digest = rows.filter((row) => row !== '').sort().join('\n')
  }
  return { produced, counted: counted.length, lateLane, digest, windows: digest === '' ? 0 : digest.split('\n').length, problems }
}
