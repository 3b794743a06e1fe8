/**
 * Ground truth of a storm, computed in the driver from the readings every device reports it
 * produced (never from an engine's results): the window values every page must show once
 * everyone has synced, and checks that the late lanes hold exactly the events that were not
 * counted, each one really beyond lateness.
 */
import type { StreamEvent } from '@tidemark/engine'
import { STORM_LATENESS_MS, STORM_WINDOW_MS, stormReading } from '../pages/stormApi.ts'

/** How an app's readings and window values look, for the driver to compute the truth. */
export interface StormTruth {
  /** Reading `seq` of `source` on a device page opened with `seed`: exactly what it ingested. */
  reading(seed: number, source: string, seq: number): StreamEvent
  /** Canonical window values of `events`, in the format of the pages' `snapshot().digest`. */
  digest(events: readonly StreamEvent[]): string
  /**
   * Whether `event` may be beyond lateness on its device when that device's earlier readings
   * reach event time `maxTsBefore` (a necessary condition: the device's watermark is at most
   * the largest event time of its own earlier batches).
   */
  canBeLate(event: StreamEvent, maxTsBefore: number): boolean
}

/**
 * Truth for pages with one `tumbling(windowMs)` spec, `allowedLateness` and the default
 * watermark (`boundedOutOfOrderness(0)`); digest rows are `tumbling:<ms>|key|start|count|sum`.
 *
 * @example
 * const truth = tumblingTruth({ windowMs: 60_000, allowedLateness: 5_000, reading: myReading })
 * await runStorm({ ..., truth })
 */
export function tumblingTruth(options: {
  readonly windowMs: number
  readonly allowedLateness: number
  readonly reading: (seed: number, source: string, seq: number) => StreamEvent
}): StormTruth {
  const { windowMs, allowedLateness } = options
  const startOf = (ts: number): number => ts - (((ts % windowMs) + windowMs) % windowMs)
  return {
    reading: options.reading,
    digest(events) {
      const cells = new Map<string, { count: number; sum: number }>()
      for (const event of events) {
        const row = `tumbling:${windowMs}|${event.key ?? ''}|${startOf(event.ts)}`
        const cell = cells.get(row) ?? { count: 0, sum: 0 }
        cell.count++
        cell.sum += event.value
        cells.set(row, cell)
      }
      return [...cells]
        .map(([row, cell]) => `${row}|${cell.count}|${cell.sum}`)
        .sort()
        .join('\n')
    },
    canBeLate: (event, maxTsBefore) => startOf(event.ts) + windowMs + allowedLateness <= maxTsBefore,
  }
}

/** The truth of the pages in `e2e/pages/storm.ts`. */
export const stormPageTruth: StormTruth = tumblingTruth({ windowMs: STORM_WINDOW_MS, allowedLateness: STORM_LATENESS_MS, reading: stormReading })

/** One device as the truth sees it: every seq it produced, and its late lane. */
export interface DeviceOutcome {
  readonly source: string
  readonly seed: number
  /** It produced seqs `1..produced`. */
  readonly produced: number
  readonly lateIds: readonly string[]
  /** Seqs up to this one came in its first batch, before it knew its own clock (not checked for lateness). */
  readonly firstBatchEnd: number
}

export interface TruthFigures {
  /** Readings produced over all devices. */
  readonly produced: number
  /** Readings not on any late lane: what every page must count. */
  readonly counted: number
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
 * const truth = groundTruth(stormPageTruth, [{ source, seed, produced: 1_000, lateIds, firstBatchEnd: 10 }])
 * expect(dashboard.digest).toBe(truth.digest)
 */
export function groundTruth(truth: StormTruth, devices: readonly DeviceOutcome[]): TruthFigures {
  const counted: StreamEvent[] = []
  const problems: string[] = []
  let produced = 0
  let lateLane = 0
  for (const device of devices) {
    const late = new Set<string>()
    for (const id of device.lateIds) {
      if (late.has(id)) problems.push(`${device.source}: ${id} is on the late lane twice`)
      late.add(id)
    }
    lateLane += late.size
    const seen = new Set<string>()
    let maxTsBefore = Number.NEGATIVE_INFINITY
    for (let seq = 1; seq <= device.produced; seq++) {
      const event = truth.reading(device.seed, device.source, seq)
      if (!late.has(event.id)) counted.push(event)
      else {
        seen.add(event.id)
        if (seq > device.firstBatchEnd && !truth.canBeLate(event, maxTsBefore)) {
          problems.push(`${device.source}: ${event.id} (ts ${event.ts}) is on the late lane but its window is within lateness of the device's earlier readings (max ts ${maxTsBefore})`)
        }
      }
      maxTsBefore = Math.max(maxTsBefore, event.ts)
      produced++
    }
    for (const id of late) if (!seen.has(id)) problems.push(`${device.source}: late-lane entry ${id} is not a reading it produced`)
  }
  const digest = truth.digest(counted)
  return { produced, counted: counted.length, lateLane, digest, windows: digest === '' ? 0 : digest.split('\n').length, problems }
}

/**
 * The rows where two digests differ (`row: expected count/sum, got count/sum`), at most
 * `limit` of them: what a failed comparison prints.
 *
 * @example
 * digestDiff(truth.digest, dashboard.digest) // ['tumbling:1000|k1|1700000003000: expected 25/100, got 24/97']
 */
export function digestDiff(expected: string, actual: string, limit = 5): string[] {
  const rows = (digest: string): Map<string, string> => {
    const map = new Map<string, string>()
    for (const line of digest.split('\n')) {
      if (line === '') continue
      const parts = line.split('|')
      map.set(parts.slice(0, -2).join('|'), parts.slice(-2).join('/'))
    }
    return map
  }
  const want = rows(expected)
  const got = rows(actual)
  const diff: string[] = []
  for (const row of new Set([...want.keys(), ...got.keys()])) {
    if (want.get(row) === got.get(row)) continue
    diff.push(`${row}: expected ${want.get(row) ?? 'none'}, got ${got.get(row) ?? 'none'}`)
    if (diff.length >= limit) break
  }
  return diff
}
