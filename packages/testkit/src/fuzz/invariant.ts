/**
 * What a campaign checks, and how a broken check is reported. Every check throws an
 * `InvariantViolation` naming the invariant, so the shrinker can keep a smaller case only
 * when it breaks the same invariant (and not some other one it stumbled on).
 */
import { isDeepStrictEqual } from 'node:util'

/** A broken invariant: `invariant` names it (e.g. `model.results`), `step` is the op that broke it. */
export class InvariantViolation extends Error {
  readonly invariant: string
  readonly step: number | null

  constructor(invariant: string, message: string, step: number | null = null) {
    super(`${invariant}${step === null ? '' : ` at op ${step}`}: ${message}`)
    this.name = 'InvariantViolation'
    this.invariant = invariant
    this.step = step
  }
}

/** The invariant a thrown value broke: an engine exception counts as its own invariant, by error name. */
export function invariantOf(error: unknown): string {
  if (error instanceof InvariantViolation) return error.invariant
  return `engine.threw:${error instanceof Error ? error.name : typeof error}`
}

/** Throws unless `condition` holds. */
export function check(condition: boolean, invariant: string, message: () => string, step: number | null = null): void {
  if (!condition) throw new InvariantViolation(invariant, message(), step)
}

/** Throws unless `actual` and `expected` are deeply equal (Object.is for numbers), naming the first difference. */
export function checkEqual(actual: unknown, expected: unknown, invariant: string, step: number | null = null): void {
  if (isDeepStrictEqual(actual, expected)) return
  const where = firstDifference(actual, expected, '$')
  throw new InvariantViolation(invariant, `${where.path}: got ${show(where.actual)}, expected ${show(where.expected)}`, step)
}

function firstDifference(a: unknown, b: unknown, path: string): { path: string; actual: unknown; expected: unknown } {
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return { path, actual: a, expected: b }
  if (Array.isArray(a) && Array.isArray(b) && a.length !== b.length) {
    const shorter = Math.min(a.length, b.length)
    for (let i = 0; i < shorter; i++) {
      if (!isDeepStrictEqual(a[i], b[i])) return firstDifference(a[i], b[i], `${path}[${i}]`)
    }
    return { path: `${path}.length`, actual: a.length, expected: b.length }
  }
  const keys = new Set([...Object.keys(a), ...Object.keys(b)])
  for (const key of keys) {
    const x = (a as Record<string, unknown>)[key]
    const y = (b as Record<string, unknown>)[key]
    if (!isDeepStrictEqual(x, y)) return firstDifference(x, y, Array.isArray(a) ? `${path}[${key}]` : `${path}.${key}`)
  }
  return { path, actual: a, expected: b }
}

/** A bounded rendering for messages: non-finite numbers kept readable, long values cut. */
export function show(value: unknown): string {
  let text: string
  try {
    text = JSON.stringify(value, (_key, v: unknown) =>
      typeof v === 'number' && !Number.isFinite(v) ? String(v) : v === undefined ? 'undefined' : v,
    )
  } catch {
    text = String(value)
  }
  text ??= String(value)
  return text.length > 600 ? `${text.slice(0, 600)}…` : text
}
