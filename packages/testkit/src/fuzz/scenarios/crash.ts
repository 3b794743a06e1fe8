/**
 * Crash and WAL replay at random points: checkpoints and crashes anywhere in a run (also
 * several per run, replaying across earlier recoveries), every journal op and checkpoint
 * going through the real record and checkpoint codecs, storage quota running out and
 * coming back. The recovered engine must show exactly what the crashed one showed, and
 * then keep agreeing with the model.
 */
import fc from 'fast-check'
import type { FuzzOp, PlanCase } from '../checks/planRun.ts'
import { streamPlan } from '../../model/streamPlan.ts'
import { trafficArbitrary } from '../traffic.ts'
import { planScenario } from './planScenario.ts'

/** The property tests' plans, with checkpoints, crashes and quota episodes spliced in at random positions. */
const splicedStreamPlan: fc.Arbitrary<PlanCase> = fc
  .tuple(
    streamPlan(),
    fc.array(fc.tuple(fc.nat(), fc.constantFrom<FuzzOp['kind']>('checkpoint', 'crash', 'crash', 'quota')), { minLength: 1, maxLength: 12 }),
  )
  .map(([plan, inserts]) => {
    const ops: FuzzOp[] = [...plan.ops]
    for (const [at, kind] of inserts) {
      const position = at % (ops.length + 1)
      if (kind === 'quota') {
        // Storage full for the next two ops, then space again.
        const during = ops.slice(position, position + 2)
        ops.splice(position, during.length, { kind: 'quota', full: true }, ...during, { kind: 'quota', full: false })
      } else {
        ops.splice(position, 0, kind === 'crash' ? { kind: 'crash' } : { kind: 'checkpoint' })
      }
    }
    ops.push({ kind: 'crash' })
    return { config: plan.config, ops }
  })

/** Where the log lives: the hand-driven journal, or `openEngine` over `memoryPersistence` with its own checkpoint cadence. */
const store: fc.Arbitrary<NonNullable<PlanCase['store']>> = fc.oneof(
  fc.constant({ kind: 'journal' as const }),
  fc.integer({ min: 1, max: 60 }).map((checkpointEvery) => ({ kind: 'openEngine' as const, checkpointEvery })),
)

export const crashAndReplay = planScenario({
  name: 'crash-and-replay',
  family: 'crash',
  summary: 'checkpoint/crash/quota ops at random points of property-test plans and fleet traffic; real codecs; openEngine reopen',
  arbitrary: fc
    .tuple(
      fc.oneof(
        splicedStreamPlan,
        trafficArbitrary({
          checkpointPercent: fc.integer({ min: 5, max: 30 }),
          crashPercent: fc.integer({ min: 5, max: 30 }),
          quotaPercent: fc.integer({ min: 0, max: 15 }),
        }),
      ),
      store,
    )
    .map(([plan, where]) => ({ ...plan, store: where })),
})
