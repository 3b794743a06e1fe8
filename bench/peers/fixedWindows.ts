import type { WindowSpec } from '@tidemark/engine'

/** A tumbling or sliding window spec as the peers need it: `size` ms long, a new one every `slide` ms. */
export interface FixedWindow {
  readonly id: string
  readonly size: number
  readonly slide: number
}

/** The engine's specs as fixed windows; the peers implement tumbling and sliding windows only. */
export function fixedWindows(specs: readonly WindowSpec[]): FixedWindow[] {
  return specs.map((spec) => {
    if (spec.kind === 'tumbling') return { id: spec.id, size: spec.size, slide: spec.size }
    if (spec.kind === 'sliding') return { id: spec.id, size: spec.size, slide: spec.slide }
    throw new TypeError(`the bench peers implement tumbling and sliding windows, not ${spec.kind}`)
  })
}

/** Start of the aligned window of `slide` that contains `ts` (floor, also for negative times). */
export function alignedStart(ts: number, slide: number): number {
  return ts - (((ts % slide) + slide) % slide)
}
