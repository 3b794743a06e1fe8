/** Builds a model-checked scenario from an arbitrary of op lists (see checks/planRun.ts). */
import type fc from 'fast-check'
import { type PlanCase, type PlanHooks, runPlan } from '../checks/planRun.ts'
import type { Scenario } from '../scenario.ts'
import { opListReductions } from '../shrink.ts'
import { describePlan, planReductions } from '../traffic.ts'

export function planScenario(spec: {
  readonly name: string
  readonly family: string
  readonly summary: string
  readonly arbitrary: fc.Arbitrary<PlanCase>
  readonly hooks?: PlanHooks
}): Scenario<PlanCase> {
  return {
    name: spec.name,
    family: spec.family,
    summary: spec.summary,
    arbitrary: spec.arbitrary,
    check: (testCase, meter) => runPlan(testCase, meter, spec.hooks),
    reduce: (testCase) => planReductions(testCase, opListReductions),
    describe: describePlan,
  }
}
