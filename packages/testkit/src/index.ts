export { checkAggregateLaws } from './aggregates/checkAggregateLaws.ts'
export { ChangeFold } from './model/changeFold.ts'
export { compareResults, modelValidation, ReferenceModel } from './model/referenceModel.ts'
export { runPlanOp, streamPlan } from './model/streamPlan.ts'

export type { AggregateLawOptions, AggregateUnderTest } from './aggregates/checkAggregateLaws.ts'
export type { ModelConfig, ModelReceipt } from './model/referenceModel.ts'
export type { PlanOp, StreamPlan, WindowKind } from './model/streamPlan.ts'
