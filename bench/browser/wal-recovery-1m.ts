/**
 * wal-recovery-1m: cold-start recovery of 1,000,000 events in Chromium (the log's target
 * < 1.5 s), beside reading the same events back from raw batched IndexedDB puts and
 * y-indexeddb loading the same batches' Yjs updates, in the same run.
 *
 *   node --import tsx --conditions=@tidemark/source bench/browser/wal-recovery-1m.ts [--events=1000000] [--batch=1000] [--rounds=3]
 *
 * One page writes every store; then each recovery runs in a fresh tab (cold JIT, nothing
 * cached in the page), `rounds` times, and the median counts. Stores:
 *   wal-checkpointed    the worst case of the default cadence (100k events): a checkpoint of
 *                       900k events plus a 100k-event log tail, the engine dropped without close
 *   wal-closed          the same, closed (a last checkpoint: nothing to replay)
 *   wal-no-checkpoint   no checkpoint at all: the whole log replays (worst case)
 *   raw                 raw batched puts: read back, then rebuilt by ingesting into an engine
 *   y-indexeddb         load the compacted doc, then merge it into an engine (bindDoc)
 */
import { isMain } from '../measure.ts'
import type { Timing } from './wal-bench/result.ts'
import { medianMs, startWalBench, type WalBenchOptions, walBenchArgs } from './wal-harness.ts'

export type RecoveryOptions = WalBenchOptions

const STORES = ['wal-checkpointed', 'wal-closed', 'wal-no-checkpoint', 'raw', 'y-indexeddb'] as const

export async function runRecovery(options: RecoveryOptions = {}): Promise<void> {
  const events = options.events ?? 1_000_000
  const batch = options.batch ?? 1_000
  const rounds = options.rounds ?? 3
  const session = await startWalBench()
  try {
    const written = await session.run({ mode: 'setup', events, batch }, 900_000)
    const recovered: Timing[] = []
    for (let round = 0; round < rounds; round++) {
      for (const store of STORES) recovered.push(...(await session.run({ mode: 'recover', store }, 300_000)))
    }
    print(written, recovered, session.browser, events, rounds)
  } finally {
    await session.close()
  }
}

function print(written: readonly Timing[], recovered: readonly Timing[], browser: string, events: number, rounds: number): void {
  console.log(`wal-recovery-1m (${browser}, headless): ${events.toLocaleString('en-US')} events, median of ${rounds} cold starts`)
  console.log('  written (one batch per task, every batch durable before the store counts as written):')
  for (const t of written) {
    console.log(`    ${t.name.padEnd(34)} ${(t.ms / 1000).toFixed(2).padStart(6)} s  ${Math.round((t.events / t.ms) * 1000).toLocaleString('en-US').padStart(10)} events/s${t.note === undefined ? '' : `  (${t.note})`}`)
  }
  console.log('  recovered (open to ready):')
  for (const name of [...new Set(recovered.map((t) => t.name))]) {
    const sample = recovered.find((t) => t.name === name)
    console.log(`    ${name.padEnd(34)} ${medianMs(recovered, name).toFixed(0).padStart(6)} ms${sample?.note === undefined ? '' : `  (${sample.note})`}`)
  }
  const checkpointed = medianMs(recovered, 'wal-checkpointed')
  const verdict = checkpointed < 1500 ? 'PASS' : 'FAIL'
  console.log(`  target: recovery of ${events.toLocaleString('en-US')} events < 1.5 s with the default checkpoint cadence: ${checkpointed.toFixed(0)} ms ${verdict}`)
  const raw = medianMs(recovered, 'raw read')
  const rebuilt = medianMs(recovered, 'raw read + engine rebuild')
  const yjs = medianMs(recovered, 'y-indexeddb load + engine merge')
  console.log(`  ratios (time, lower is better for the first named):`)
  console.log(`    wal-checkpointed / raw read ${(checkpointed / raw).toFixed(2)}x, / raw read + engine rebuild ${(checkpointed / rebuilt).toFixed(2)}x`)
  console.log(`    wal-no-checkpoint / raw read + engine rebuild ${(medianMs(recovered, 'wal-no-checkpoint') / rebuilt).toFixed(2)}x`)
  console.log(`    wal-checkpointed / y-indexeddb load + engine merge ${(checkpointed / yjs).toFixed(2)}x`)
}

if (isMain(import.meta.url)) {
  runRecovery(walBenchArgs(process.argv)).catch((error: unknown) => {
    console.error(error)
    process.exitCode = 1
  })
}
