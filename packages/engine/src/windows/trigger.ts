/**
 * When a window emits a pane besides its on-time firing (docs/semantics.md, Triggers and
 * accumulation). The on-time pane always fires when the frontier passes the window's end;
 * a trigger says when the early panes before it (`trigger.early`) and the late panes after it
 * (`trigger.late`) fire. Made by `everyElement()`, `afterProcessingTime(ms)`,
 * `alignedProcessingTime(periodMs, offsetMs)` and `never()`.
 *
 * @example
 * createEngine({ windows: tumbling(60_000), trigger: { early: afterProcessingTime(1_000), late: never() } })
 */
export type Trigger =
  | { readonly kind: 'every_element' }
  | { readonly kind: 'after_processing_time'; readonly delayMs: number }
  | { readonly kind: 'aligned_processing_time'; readonly periodMs: number; readonly offsetMs: number }
  | { readonly kind: 'never' }

/**
 * The `trigger` option: early and late triggers, each defaulting to `everyElement()`.
 *
 * @example
 * const trigger: TriggerOptions = { early: alignedProcessingTime(5_000), late: afterProcessingTime(10_000) }
 */
export interface TriggerOptions {
  /** Panes before the on-time firing: `everyElement()` (default), `afterProcessingTime`, `alignedProcessingTime` or `never()`. */
  readonly early?: Trigger
  /** Panes after the on-time firing, while late data is admitted: `everyElement()` (default), `afterProcessingTime` or `never()`. */
  readonly late?: Trigger
}

const EVERY_ELEMENT: Trigger = Object.freeze({ kind: 'every_element' })
const NEVER: Trigger = Object.freeze({ kind: 'never' })

/**
 * A pane for every batch (or merge of peers' state) that changes the window: the default, early and late.
 *
 * @example
 * createEngine({ windows: tumbling(60_000), trigger: { early: everyElement() } }) // as without the option
 */
export function everyElement(): Trigger {
  return EVERY_ELEMENT
}

/**
 * A pane `delayMs` of processing time (the engine's `now()`) after the first change since the
 * window's last pane; the next change then starts the next delay. Fired by `tick()`: call it at
 * `nextTickAt()`, as `tickWhenDue` does. An early timer is cancelled when the window fires on time; a late pane still due
 * when the window turns final fires then.
 *
 * @example
 * const engine = createEngine({ windows: tumbling(60_000), trigger: { early: afterProcessingTime(1_000) } })
 * tickWhenDue(engine) // at most one early pane per window per second, each at its deadline
 */
export function afterProcessingTime(delayMs: number): Trigger {
  if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0) {
    throw new RangeError(`afterProcessingTime needs a finite number of ms >= 0, got ${String(delayMs)}`)
  }
  return { kind: 'after_processing_time', delayMs }
}

/**
 * Early panes at processing-time boundaries `offsetMs + k × periodMs` (micro-batches): a window
 * changed since its last pane fires at the next boundary, together with every other such window.
 * Fired by `tick()`. Early only.
 *
 * @example
 * createEngine({ windows: tumbling(60_000), trigger: { early: alignedProcessingTime(5_000) } }) // every 5 s of `now()`
 */
export function alignedProcessingTime(periodMs: number, offsetMs = 0): Trigger {
  if (typeof periodMs !== 'number' || !Number.isFinite(periodMs) || periodMs <= 0) {
    throw new RangeError(`alignedProcessingTime needs a period of ms > 0, got ${String(periodMs)}`)
  }
  if (typeof offsetMs !== 'number' || !Number.isFinite(offsetMs) || offsetMs < 0 || offsetMs >= periodMs) {
    throw new RangeError(`alignedProcessingTime needs an offset in [0, ${periodMs}) ms, got ${String(offsetMs)}`)
  }
  return { kind: 'aligned_processing_time', periodMs, offsetMs }
}

/**
 * No early (or late) panes. Late data is still counted in the window: it shows in the next pane,
 * at the latest when the window turns final.
 *
 * @example
 * createEngine({ windows: tumbling(60_000), trigger: { early: never() } }) // nothing until the on-time pane
 */
export function never(): Trigger {
  return NEVER
}

/** The processing time at which a timer armed at `now` fires, or NaN for a trigger without timers (or a clock that gave no usable time). */
export function deadlineOf(trigger: Trigger, now: number): number {
  if (trigger.kind === 'after_processing_time') return now + trigger.delayMs
  if (trigger.kind !== 'aligned_processing_time') return Number.NaN
  const { periodMs, offsetMs } = trigger
  return Math.floor((now - offsetMs) / periodMs) * periodMs + offsetMs + periodMs
}

/**
 * Whether `trigger` fires by processing-time deadlines (`afterProcessingTime`,
 * `alignedProcessingTime`), so a change arms a timer.
 *
 * @example
 * hasDeadlines(afterProcessingTime(1_000)) // true
 * hasDeadlines(everyElement()) // false
 */
export function hasDeadlines(trigger: Trigger): boolean {
  return trigger.kind === 'after_processing_time' || trigger.kind === 'aligned_processing_time'
}

/** The trigger its constructor makes from the same fields, or null when there is none. */
export function remadeTrigger(value: unknown): Trigger | null {
  if (typeof value !== 'object' || value === null) return null
  const t = value as Record<string, unknown>
  try {
    if (t.kind === 'every_element' && Object.keys(t).length === 1) return everyElement()
    if (t.kind === 'never' && Object.keys(t).length === 1) return never()
    if (t.kind === 'after_processing_time' && Object.keys(t).length === 2) return afterProcessingTime(t.delayMs as number)
    if (t.kind === 'aligned_processing_time' && Object.keys(t).length === 3) return alignedProcessingTime(t.periodMs as number, t.offsetMs as number)
  } catch {
    return null
  }
  return null
}
