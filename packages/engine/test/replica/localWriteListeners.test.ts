/**
 * A transport's `onLocalWrite` listener runs once the batch is whole: it may call the engine (a
 * transport that takes a checkpoint as a write goes out). The aggregates' states it carries are
 * encoded inside the engine's operation (an `encode` that throws stops the engine, B44); the
 * listeners are called outside it.
 */
import { expect, it } from 'vitest'
import { createEngine, manual, type TidemarkEngine, tumbling } from '../../src/index.ts'

it('an onLocalWrite listener may read a checkpoint of the engine once the batch is applied', () => {
  const engine = createEngine({ windows: tumbling(10_000), watermark: manual(), replicaId: 'phone' }) as TidemarkEngine
  const errors: unknown[] = []
  let checkpoints = 0
  engine.replica.onLocalWrite(() => {
    try {
      engine.checkpoint()
      checkpoints++
    } catch (error) {
      errors.push(error)
    }
  })
  const receipt = engine.ingest([{ id: 'd1-1', source: 'd1', seq: 1, ts: 1_000, value: 20 }])
  expect(receipt.accepted).toBe(1)
  expect(errors.map((e) => (e as Error).message)).toEqual([])
  expect(checkpoints).toBe(1)
})
