/**
 * Delta debugging after fast-check's own shrinking. fast-check shrinks the parameters a
 * case was generated from; the op list a generator builds from them is shrunk here, by
 * removing chunks of ops (halving the chunk size, as ddmin does), then chunks of events
 * inside each op, then whatever simplifications a scenario offers. A candidate is kept
 * only when it still breaks the same invariant.
 */

/** Greedy first-improvement search over `reduce` until no candidate fails or the deadline passes. */
export async function deltaDebug<C>(
  start: C,
  reduce: (testCase: C) => Iterable<C>,
  fails: (testCase: C) => Promise<boolean>,
  deadline: number,
): Promise<{ readonly testCase: C; readonly attempts: number; readonly complete: boolean }> {
  let current = start
  let attempts = 0
  for (;;) {
    let improved = false
    for (const candidate of reduce(current)) {
      if (Date.now() > deadline) return { testCase: current, attempts, complete: false }
      attempts++
      if (await fails(candidate)) {
        current = candidate
        improved = true
        break
      }
    }
    if (!improved) return { testCase: current, attempts, complete: true }
  }
}

/** `items` without the chunks of each size from half the length down to 1, biggest first. */
export function* withoutChunks<T>(items: readonly T[]): Generator<T[]> {
  for (let size = Math.max(1, Math.floor(items.length / 2)); size >= 1; size = size === 1 ? 0 : Math.max(1, Math.floor(size / 2))) {
    for (let at = 0; at < items.length; at += size) yield [...items.slice(0, at), ...items.slice(at + size)]
  }
}

/**
 * Reductions of an op list: chunks of ops removed, then chunks of the events inside any op
 * that carries `events` (an op left with no events is removed in the first pass instead).
 */
export function* opListReductions<Op>(ops: readonly Op[]): Generator<Op[]> {
  yield* withoutChunks(ops)
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as Op & { readonly events?: readonly unknown[] }
    if (!Array.isArray(op.events) || op.events.length < 2) continue
    for (const events of withoutChunks(op.events)) {
      const copy = [...ops]
      copy[i] = { ...op, events } as Op
      yield copy
    }
  }
}
