/**
 * Window shapes. All windows are half-open `[start, end)` in event time, aligned to the epoch
 * (tumbling and sliding starts are multiples of the size or slide, also before 1970).
 *
 * A spec's `id` names it wherever a window is named: `WindowResult.window`, `results({ window })`,
 * `history(window, ...)`, the React hooks' `window` argument, the late lane, and the
 * replicated state (replicas with different specs refuse to merge). Ids are derived from the
 * shape, never chosen: `tumbling(60_000).id === 'tumbling:60000'`,
 * `sliding(60_000, 10_000).id === 'sliding:60000:10000'` (size, then slide),
 * `cumulating(86_400_000, 3_600_000).id === 'cumulating:86400000:3600000'` (largest size, then
 * step), `session(30_000).id === 'session:30000'` (the gap), all in ms. Read it from the spec rather
 * than writing it by hand.
 *
 * @example
 * const minute: WindowSpec = tumbling(60_000)
 * engine.results({ window: minute.id, key: 'temp' }) // minute.id === 'tumbling:60000'
 */
export type WindowSpec =
  | { readonly kind: 'tumbling'; readonly id: string; readonly size: number }
  | { readonly kind: 'sliding'; readonly id: string; readonly size: number; readonly slide: number }
  | {
      readonly kind: 'cumulating'
      readonly id: string
      /** The largest window: the period whose windows grow by `step`. */
      readonly size: number
      readonly step: number
    }
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
 * Windows that grow by `step` up to `maxSize` (Flink's CUMULATE): in each period of `maxSize` ms
 * aligned to the epoch, the windows `[d, d + step)`, `[d, d + 2 × step)`, ... `[d, d + maxSize)`,
 * all starting at the period's start `d`. `maxSize` must be a multiple of `step`, at most 1,000
 * steps. Each window fires, corrects and turns final by its own end; windows of one period share
 * their start, so they are told apart by their end.
 *
 * @example
 * createEngine({ windows: cumulating(86_400_000, 3_600_000) }) // day to date, updated every hour
 */
export function cumulating(maxSize: number, step: number): WindowSpec {
  positiveInteger('cumulating maxSize', maxSize)
  positiveInteger('cumulating step', step)
  if (maxSize % step !== 0) throw new RangeError(`cumulating maxSize ${maxSize} must be a multiple of step ${step}`)
  if (maxSize / step > 1000) throw new RangeError(`cumulating maxSize/step must be at most 1000, got ${maxSize / step}`)
  return { kind: 'cumulating', id: `cumulating:${maxSize}:${step}`, size: maxSize, step }
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

/**
 * Start of the window of `spec` that contains event time `ts`, to name a window in
 * `results({ window, from })`, `history(window, key, start)` or `useWindow(window, key, start)`:
 * for `tumbling(size)` the one window holding `ts`; for `sliding(size, slide)` the latest of the
 * `size / slide` windows holding it (the others start `slide`, `2 × slide`, ... earlier); for
 * `cumulating(maxSize, step)` the start of the period holding `ts`, shared by all its windows.
 * Times before 1970 round down too. Throws a RangeError for a session spec (a session starts
 * at its first event, which `ts` alone cannot tell: read `start` from its results) and for a
 * `ts` that is not a finite number.
 *
 * @example
 * windowStart(tumbling(60_000), Date.parse('2026-01-01T10:15:42Z')) // Date.parse('2026-01-01T10:15:00Z')
 * windowStart(sliding(60_000, 10_000), 125_000) // 120000: [120000, 180000), the latest of 6 windows holding it
 * windowStart(tumbling(60_000), -1) // -60000
 * const minute = tumbling(60_000)
 * const result = engine.results({ window: minute.id, key: 'temp', from: windowStart(minute, now) })[0]
 */
export function windowStart(spec: WindowSpec, ts: number): number {
  if (typeof spec !== 'object' || spec === null || typeof spec.kind !== 'string') {
    throw new TypeError('windowStart needs a window spec: tumbling(size), sliding(size, slide), cumulating(maxSize, step) or session(gap)')
  }
  if (typeof ts !== 'number' || !Number.isFinite(ts)) throw new RangeError(`windowStart needs a finite event time in ms, got ${String(ts)}`)
  switch (spec.kind) {
    case 'tumbling':
      return alignedStart(ts, spec.size)
    case 'sliding':
      return alignedStart(ts, spec.slide)
    case 'cumulating':
      return alignedStart(ts, spec.size)
    case 'session':
      throw new RangeError(`windowStart: ${spec.id} windows start at their first event, not at a time computable from ts; read start from the session's results`)
    default:
      throw new TypeError(`windowStart: unknown window spec ${JSON.stringify(spec)}`)
  }
}

/** Start of the aligned window of `size` containing `ts` (floor, also for negative times). */
export function alignedStart(ts: number, size: number): number {
  // A division is several times cheaper than `%` on doubles; the check keeps it exact, `+ 0` never -0.
  const start = Math.floor(ts / size) * size + 0
  if (start <= ts && ts < start + size) return start
  const r = ts % size
  return r < 0 ? ts - r - size : ts - r
}

/**
 * How long a fixed spec's slices are (the slide, the cumulating step, or the tumbling size): an
 * event is placed in the slice of this length its time falls in.
 *
 * @example
 * sliceLength(sliding(60_000, 10_000)) // 10000
 */
export function sliceLength(spec: WindowSpec & { kind: 'tumbling' | 'sliding' | 'cumulating' }): number {
  return spec.kind === 'cumulating' ? spec.step : spec.kind === 'sliding' ? spec.slide : spec.size
}

/** Longest distance from an event's time to the end of any window it can belong to, ignoring session growth. */
export function reach(spec: WindowSpec): number {
  return spec.kind === 'session' ? spec.gap : spec.size
}
