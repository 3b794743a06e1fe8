/**
 * `useEngineStats` shows what changed in the stats without a window changing: a batch refused
 * whole (over `limits.maxBatch`, or while storage refuses writes) and a write the log failed
 * after its batch was published (`persistenceError`, set when the write settles). Each used to
 * notify nobody, so the hook kept showing "ok" while the engine refused every batch.
 */
import { createEngine, createManualScheduler, type Engine, type EngineStats, tumbling } from '@tidemark/engine'
import { openEngine } from '@tidemark/idb'
import { memoryPersistence } from '@tidemark/idb/memory'
import { act, cleanup, render, screen } from '@testing-library/react'
import { afterEach, expect, it } from 'vitest'
import { EngineProvider } from '../src/EngineProvider.tsx'
import { useEngineStats } from '../src/useEngineStats.ts'

afterEach(cleanup)

const shown = (s: EngineStats): string => `${s.persistenceError ?? 'ok'} | overflow ${s.anomalies.overflow} | ingested ${s.ingested}`

function Health() {
  const text = useEngineStats(shown)
  return <output data-testid="health">{text}</output>
}

function Log() {
  return <output data-testid="log">{useEngineStats((s) => s.walRecords)}</output>
}

function mount(engine: Engine): ReturnType<typeof createManualScheduler> {
  const scheduler = createManualScheduler()
  render(
    <EngineProvider engine={engine} scheduler={scheduler}>
      <Health />
    </EngineProvider>,
  )
  return scheduler
}

const reading = (i: number) => ({ id: `r${i}`, source: 'truck-1', seq: i, ts: i, key: 'temp', value: 1 })

it('shows a batch refused whole for limits.maxBatch at the next frame', () => {
  const engine = createEngine({ windows: tumbling(10), limits: { maxBatch: 2 } })
  const scheduler = mount(engine)
  engine.ingest([reading(1), reading(2), reading(3)])
  act(() => scheduler.flush())
  expect(screen.getByTestId('health').textContent).toBe('ok | overflow 3 | ingested 3')
})

it('shows a log write that failed after its batch, and the batches refused while the log is blocked', async () => {
  const persistence = memoryPersistence()
  let full = false
  const append = persistence.append.bind(persistence)
  const diskFull = 'QuotaExceededError: disk full'
  persistence.append = (op) => (full ? Promise.reject(new Error(diskFull)) : append(op))
  const engine = await openEngine({ windows: tumbling(10), persistence })
  const scheduler = mount(engine)
  full = true
  const first = engine.ingest([reading(1)])
  act(() => scheduler.flush())
  expect(screen.getByTestId('health').textContent).toBe('ok | overflow 0 | ingested 1')
  // Published, then its write failed: durable rejects with the log's error (an Error instance: the exact message).
  await expect(first.durable).rejects.toThrow(new Error(diskFull))
  act(() => scheduler.flush())
  expect(screen.getByTestId('health').textContent).toBe('QuotaExceededError: disk full | overflow 0 | ingested 1')
  // Refused whole while the log is blocked: each durable rejects with the same error.
  for (let i = 2; i <= 4; i++) await expect(engine.ingest([reading(i)]).durable).rejects.toThrow(new Error(diskFull))
  act(() => scheduler.flush())
  expect(screen.getByTestId('health').textContent).toBe(shown(engine.stats()))
  expect(screen.getByTestId('health').textContent).toBe('QuotaExceededError: disk full | overflow 3 | ingested 4')
  await engine.close()
})

it('shows the log truncated by a checkpoint that commits after the batch that called for it', async () => {
  const engine = await openEngine({ windows: tumbling(10), persistence: memoryPersistence(), checkpointEvery: { events: 3 } })
  const scheduler = mount(engine)
  render(
    <EngineProvider engine={engine} scheduler={scheduler}>
      <Log />
    </EngineProvider>,
  )
  const records: number[] = []
  for (let i = 1; i <= 3; i++) {
    const { durable } = engine.ingest([reading(i)])
    act(() => scheduler.flush())
    records.push(Number(screen.getByTestId('log').textContent))
    await durable
  }
  // The third batch called for a checkpoint, committed after the batch's notification: a frame shows the truncated log.
  act(() => scheduler.flush())
  expect(engine.stats().walRecords).toBe(0)
  expect([...records, Number(screen.getByTestId('log').textContent)]).toEqual([1, 2, 3, 0])
  await engine.close()
})
