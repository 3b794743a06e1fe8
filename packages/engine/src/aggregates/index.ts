/**
 * Aggregates carried by cells beside count, sum, min and max: `quantiles`, `distinct`, `latest`,
 * `histogram` and user-defined ones (`defineAggregate`), each a plain-data state with a merge,
 * a canonical byte encoding and the laws of README.md in this folder.
 *
 * @module aggregates
 */
export { compareBytes, sameBytes } from './byteOrder.ts'
export { defineAggregate } from './defineAggregate.ts'
export { distinct } from './distinct.ts'
export { histogram } from './histogram.ts'
export { latest } from './latest.ts'
export { quantiles } from './quantiles.ts'

export type { Aggregate, AggregateDefinitions, AggregateResult, AggregateResults, AnyAggregate } from './aggregate.ts'
export type { AggregateDefinition } from './defineAggregate.ts'
export type { DistinctOptions } from './distinct.ts'
export type { HistogramOptions } from './histogram.ts'
export type { DistinctSketch } from './hyperLogLog.ts'
export type { LatestOptions, LatestState } from './latest.ts'
export type { QuantileSketch, QuantilesOptions } from './quantiles.ts'
export type { BucketStore } from './bucketStore.ts'
