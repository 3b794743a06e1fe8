import type { StreamEvent } from '../../src/input/event.ts'
import type { Aggregate } from '../../src/aggregates/aggregate.ts'

/** An event carrying `value`, the i-th of its source. */
export function eventOf(value: number, i = 0, source = 'd1'): StreamEvent {
  return { id: `${source}-${i}`, source, seq: i + 1, ts: 1_000 + i, value }
}

/** The state of `inputs` added one by one to `init()`. */
export function stateOf<S, R, I>(aggregate: Aggregate<S, R, I>, inputs: Iterable<I>): S {
  let state = aggregate.init()
  let i = 0
  for (const input of inputs) {
    state = aggregate.add(state, input, eventOf(typeof input === 'number' ? input : 0, i++))
  }
  return state
}

/**
 * The state of `inputs` split into `parts` contiguous pieces (cut where `cuts` say), each built on
 * its own and then merged in the order `order` gives: a source's events spread over cells or
 * slices and combined in any order.
 */
export function mergedState<S, R, I>(aggregate: Aggregate<S, R, I>, inputs: readonly I[], cuts: readonly number[], order: readonly number[]): S {
  const points = [...new Set(cuts.map((c) => c % (inputs.length + 1)))].sort((a, b) => a - b)
  const pieces: I[][] = []
  let from = 0
  for (const p of [...points, inputs.length]) {
    pieces.push(inputs.slice(from, p))
    from = p
  }
  const states = pieces.map((piece) => stateOf(aggregate, piece))
  const ranked = states.map((s, i) => ({ s, key: order[i % Math.max(1, order.length)] ?? 0, i })).sort((a, b) => a.key - b.key || a.i - b.i)
  // A merge tree, not only a left fold: pair neighbours until one state is left.
  let level = ranked.map((r) => r.s)
  while (level.length > 1) {
    const next: S[] = []
    for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? aggregate.merge(level[i] as S, level[i + 1] as S) : (level[i] as S))
    level = next
  }
  return level[0] ?? aggregate.init()
}

/** Bytes from a hex string with optional spaces, for hostile encodings. */
export function bytesOf(hex: string): Uint8Array {
  const clean = hex.replaceAll(' ', '')
  return new Uint8Array(clean.match(/../g)?.map((h) => Number.parseInt(h, 16)) ?? [])
}

/** Fisher–Yates with a seeded draw. */
export function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = items.slice()
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    const t = out[i] as T
    out[i] = out[j] as T
    out[j] = t
  }
  return out
}
