/**
 * Window shapes. All windows are half-open `[start, end)` in event time.
 * A spec's `id` names it in results (`'tumbling:60000'`) and in replicated state,
 * so replicas with different specs can refuse to merge.
 */
export type WindowSpec =
  | { readonly kind: 'tumbling'; readonly id: string; readonly size: number }
  | { readonly kind: 'sliding'; readonly id: string; readonly size: number; readonly slide: number }
  | { readonly kind: 'session'; readonly id: string; readonly gap: number }

function positiveInteger(name: string, n: number): number {
  if (!Number.isSafeInteger(n) || n <= 0) throw new RangeError(`${name} must be a positive integer of ms, got ${String(n)}`)
  return n
}

/**
 * Fixed, non-overlapping windows of `size` ms aligned to the epoch.
 *
 * @example
 * createEngine({ windows: tumbling(60_000) }) // one-minute buckets, id 'tumbling:60000'
 */
export function tumbling(size: number): WindowSpec {
  positiveInteger('tumbling size', size)
  return { kind: 'tumbling', id: `tumbling:${size}`, size }
}

/**
 * Overlapping windows of `size` ms starting every `slide` ms; `size` must be a multiple of `slide`.
 *
 * @example
 * createEngine({ windows: sliding(60_000, 10_000) }) // each event lands in 6 windows
 */
export function sliding(size: number, slide: number): WindowSpec {
  positiveInteger('sliding size', size)
  positiveInteger('sliding slide', slide)
  if (size % slide !== 0) throw new RangeError(`sliding size ${size} must be a multiple of slide ${slide}`)
  if (size / slide > 1000) throw new RangeError(`sliding size/slide must be at most 1000, got ${size / slide}`)
  return { kind: 'sliding', id: `sliding:${size}:${slide}`, size, slide }
}

/**
 * Per-key sessions: events closer than `gap` ms share a session `[minTs, maxTs + gap)`.
 *
 * @example
 * createEngine({ windows: session(30_000) }) // a device's burst of readings, closed by 30 s of silence
 */
export function session(gap: number): WindowSpec {
  positiveInteger('session gap', gap)
  return { kind: 'session', id: `session:${gap}`, gap }
}

/** Start of the aligned window of `size` containing `ts` (floor, also for negative times). */
export function alignedStart(ts: number, size: number): number {
  // A division is several times cheaper than `%` on doubles; the check keeps it exact, `+ 0` never -0.
  const start = Math.floor(ts / size) * size + 0
  if (start <= ts && ts < start + size) return start
  const r = ts % size
  return r < 0 ? ts - r - size : ts - r
}

/** Longest distance from an event's time to the end of any window it can belong to, ignoring session growth. */
export function reach(spec: WindowSpec): number {
  return spec.kind === 'session' ? spec.gap : spec.size
}
