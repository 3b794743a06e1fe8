/** Every failed expectation of a storm, one line each: what `StormResult.problems` lists. */
import type { StormSnapshot } from '../contract/stormPageApi.ts'
import { digestDiff } from './digestDiff.ts'
import type { TruthFigures } from './groundTruth.ts'

/**
 * What a storm's figures say against "nothing lost, nothing counted twice, everyone
 * converged on the ground truth" (empty when it passed).
 *
 * @example
 * const problems = stormProblems({ truth, receipts, totals, snapshots, stopped, converged })
 * // ['dashboard storm-dashboard-1: window values differ from the ground truth (counted 9980, truth 10000): ...']
 */
export function stormProblems(run: {
  readonly truth: TruthFigures
  readonly receipts: { readonly accepted: number; readonly beyondLateness: number; readonly duplicates: number; readonly rejected: number }
  readonly totals: { readonly produced: number; readonly gaps: readonly string[] }
  /** Every page after the wait for convergence. */
  readonly snapshots: readonly StormSnapshot[]
  /** The devices when their ingest stopped. */
  readonly stopped: readonly StormSnapshot[]
  readonly converged: boolean
  /** When given, each device page must show the truth of its own readings (by source) rather than the fleet's. */
  readonly deviceTruths?: Readonly<Record<string, TruthFigures>>
}): string[] {
  const problems = [...run.totals.gaps, ...run.truth.problems]
  for (const s of run.snapshots) for (const error of s.errors) problems.push(`${s.source}: ${error}`)
  if (!run.converged) problems.push('pages did not converge on the ground truth')
  for (const s of run.snapshots) {
    const own = s.role === 'device' ? run.deviceTruths?.[s.source] : undefined
    const expected = own ?? run.truth
    if (s.digest !== expected.digest) {
      const which = own === undefined ? 'the ground truth' : 'the truth of its own readings'
      problems.push(`${s.role} ${s.source}: window values differ from ${which} (counted ${s.counted}, truth ${expected.counted}): ${digestDiff(expected.digest, s.digest).join('; ')}`)
    }
  }
  if (run.totals.produced !== run.truth.produced) problems.push(`durable reports cover ${run.totals.produced} readings, devices produced ${run.truth.produced}`)
  if (run.receipts.accepted + run.receipts.beyondLateness !== run.truth.produced) {
    problems.push(`receipts: accepted ${run.receipts.accepted} + beyond lateness ${run.receipts.beyondLateness} != produced ${run.truth.produced}`)
  }
  if (run.receipts.beyondLateness !== run.truth.lateLane) problems.push(`receipts say ${run.receipts.beyondLateness} beyond lateness, late lanes hold ${run.truth.lateLane}`)
  if (run.receipts.duplicates !== 0 || run.receipts.rejected !== 0) problems.push(`receipts: ${run.receipts.duplicates} duplicates, ${run.receipts.rejected} rejected`)
  for (const s of run.stopped) if (s.durable !== s.produced) problems.push(`${s.source}: produced ${s.produced}, durable ${s.durable}`)
  return problems
}
