import type { Accumulation, AggregateDefinitions, Trigger, WatermarkStrategy, WindowSpec } from '@tidemark/engine'
import type { ModelAnomaly } from './modelValidation.ts'

/**
 * What the reference model runs: the engine options it models. The test kit's plans generate
 * them (`streamPlan`), and the engine under test gets the same ones.
 *
 * @example
 * const config: ModelConfig = { windows: [tumbling(10)], watermark: manual(), idleTimeout: 0, allowedLateness: 5, retention: 20 }
 */
export interface ModelConfig {
  readonly windows: readonly WindowSpec[]
  readonly watermark: WatermarkStrategy
  readonly idleTimeout: number
  readonly allowedLateness: number
  readonly retention: number
  /** Default `everyElement()` early and late. */
  readonly trigger?: { readonly early?: Trigger; readonly late?: Trigger }
  /** Default `'accumulating'`. */
  readonly accumulation?: Accumulation
  /** Default a day. */
  readonly maxFutureSkew?: number
  /** Aggregates of every window, recomputed from its events (modelAggregates.ts). */
  readonly aggregates?: AggregateDefinitions
}

/**
 * What the model's `ingest` answers: the engine's receipt without its durability promise.
 *
 * @example
 * const receipt: ModelReceipt = model.ingest(events, 0)
 */
export interface ModelReceipt {
  readonly accepted: number
  readonly late: number
  readonly duplicates: number
  readonly beyondLateness: number
  readonly rejected: number
  readonly anomalies: readonly ModelAnomaly[]
}
