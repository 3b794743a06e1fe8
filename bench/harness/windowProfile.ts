/**
 * The shape most window profiles share: one set of upload batches, fixed windows, and three
 * contenders on the same events (Tidemark, the plain-loop floor, RxJS) with the headline
 * ratios, whose window totals must agree.
 */
import { boundedOutOfOrderness, type StreamEvent, type WindowSpec } from '@tidemark/engine'
import { fixedWindows } from '../peers/fixedWindows.ts'
import { plainLoopContender } from '../peers/plainLoop.ts'
import { rulesLoopContender } from '../peers/rulesLoop.ts'
import { rxjsContender } from '../peers/rxjsWindows.ts'
import { tidemarkContender } from '../peers/tidemark.ts'
import { eventCount } from '../workload.ts'
import type { ProfileDefinition } from './profile.ts'
import { windowRatios } from './ratios.ts'

export interface WindowProfileSetup {
  readonly name: string
  readonly description: string
  readonly batches: readonly (readonly StreamEvent[])[]
  /** Fixed windows (tumbling or sliding): the plain loop and RxJS peers have no sessions. */
  readonly specs: readonly WindowSpec[]
  readonly outOfOrderness: number
  readonly allowedLateness: number
  readonly idleTimeout?: number
  /** Processing time (ms) at which batch `i` is ingested; default 0 for every batch. */
  readonly clock?: (batch: number) => number
  /** Tidemark's share of the floor to reach (default 35%). */
  readonly floorTarget?: number
}

/**
 * A profile of Tidemark, the plain-loop floor and RxJS over the same batches and windows.
 *
 * @example
 * export const define = () =>
 *   windowProfile({ name: 'streaming-100k', description: '…', batches, specs: [tumbling(60_000)], outOfOrderness: 10_000, allowedLateness: 60_000 })
 */
export function windowProfile(setup: WindowProfileSetup): ProfileDefinition {
  const { batches, specs, outOfOrderness, allowedLateness, idleTimeout, clock } = setup
  const windows = fixedWindows(specs)
  const idle = idleTimeout === undefined ? {} : { idleTimeout }
  return {
    name: setup.name,
    description: setup.description,
    events: eventCount(batches),
    batches: batches.length,
    contenders: [
      tidemarkContender(
        batches,
        { windows: [...specs], watermark: boundedOutOfOrderness(outOfOrderness), allowedLateness, ...idle },
        clock === undefined ? {} : { clock },
      ),
      plainLoopContender(batches, windows),
      rulesLoopContender(batches, { windows, outOfOrderness, allowedLateness, ...idle }, clock),
      rulesLoopContender(batches, { windows, outOfOrderness, allowedLateness, ...idle, cells: true }, clock),
      rxjsContender(batches, { windows, outOfOrderness, allowedLateness, ...idle }, clock),
    ],
    ratios: windowRatios(setup.floorTarget),
    agree: [
      ['tidemark', 'rxjs'],
      ['tidemark', 'rules-loop'],
      ['tidemark', 'cells-loop'],
    ],
  }
}
