import type { StreamEvent } from '../input/event.ts'

/**
 * The input of a numeric aggregate without `of`: the event's value.
 *
 * @example
 * eventValue({ id: 'a', source: 'd1', ts: 0, value: 21.5 }) // 21.5
 */
export function eventValue(event: StreamEvent): number {
  return event.value
}

/**
 * Why a numeric input cannot be added, or null: `of` may return anything at run time.
 *
 * @example
 * finiteInput(Number.NaN) // 'expected a finite number, got NaN'
 * finiteInput(3) // null
 */
export function finiteInput(input: unknown): string | null {
  return typeof input === 'number' && Number.isFinite(input) ? null : `expected a finite number, got ${describeInput(input)}`
}

/** A short, safe description of an unexpected input for an anomaly's detail. */
export function describeInput(input: unknown): string {
  return typeof input === 'string' ? JSON.stringify(input.slice(0, 40)) : typeof input === 'number' ? String(input) : input === null ? 'null' : typeof input
}
