/**
 * wal-append: write-ahead log append throughput in Chromium, beside raw batched IndexedDB
 * puts and y-indexeddb storing the same batches' Yjs updates, in the same run (the log's
 * target: WAL append >= 0.5 x raw batched puts).
 *
 *   node --import tsx --conditions=@tidemark/source bench/browser/wal-append.ts [--events=200000] [--batch=1000] [--rounds=3]
 *
 * Contenders, each into a fresh database, in rotating order every round:
 *   raw-put        one record per batch (the event objects as they are), one transaction each
 *   wal-append     indexedDbPersistence.append: one columnar, checksummed record per batch
 *   engine+wal     openEngine: engine.ingest(batch).durable, checkpoints included; `/late`: the
 *                  same with 10% of the readings beyond lateness (late lane and its store busy)
 *   y-indexeddb    the Yjs updates an engine bound to a Y.Doc publishes for the same batches
 * fed `sequential` (await each commit before the next batch), `stream` (one batch per task,
 * commits overlap), `burst` (ten batches per task: what append coalescing is for) or
 * `one-task` (every batch at once: raw puts in a single transaction, the fastest raw write).
 */
import { isMain } from '../measure.ts'
import type { Timing } from './wal-bench/result.ts'
import { formatRate, medianMs, startWalBench, type WalBenchOptions, walBenchArgs } from './wal-harness.ts'

export type AppendOptions = WalBenchOptions

export async function runAppend(options: AppendOptions = {}): Promise<void> {
  const events = options.events ?? 200_000
  const batch = options.batch ?? 1_000
  const rounds = options.rounds ?? 3
  const session = await startWalBench()
  try {
    const timings = await session.run({ mode: 'append', events, batch, rounds }, 600_000)
    print(timings, session.browser, events, batch, rounds)
  } finally {
    await session.close()
  }
}

function print(timings: readonly Timing[], browser: string, events: number, batch: number, rounds: number): void {
  const names = [...new Set(timings.map((t) => t.name))]
  console.log(`wal-append (${browser}, headless): ${events.toLocaleString('en-US')} events in batches of ${batch}, median of ${rounds} rounds`)
  for (const name of names) {
    const ms = medianMs(timings, name)
    const bytes = timings.find((t) => t.name === name)?.bytes
    const size = bytes === undefined ? '' : `  ${(bytes / 1e6).toFixed(1)} MB`
    console.log(`  ${name.padEnd(36)} ${ms.toFixed(0).padStart(6)} ms  ${formatRate(events, ms).padStart(20)}${size}`)
  }
  console.log('  ratios (throughput, higher is better for the first named):')
  for (const how of ['sequential', 'stream', 'burst', 'one-task']) {
    const raw = medianMs(timings, `raw-put/${how}`)
    const wal = medianMs(timings, `wal-append/${how}`)
    const engine = medianMs(timings, `engine+wal/${how}`)
    const yjs = medianMs(timings, `y-indexeddb/${how}`)
    const target = raw / wal >= 0.5 ? 'PASS' : 'FAIL'
    console.log(`    ${how.padEnd(10)} wal-append / raw-put ${(raw / wal).toFixed(2)}x [target >= 0.5x: ${target}]`)
    if (Number.isFinite(engine)) console.log(`    ${how.padEnd(10)} engine+wal / raw-put ${(raw / engine).toFixed(2)}x`)
    const late = medianMs(timings, `engine+wal/${how}/late`)
    if (Number.isFinite(late)) console.log(`    ${how.padEnd(10)} engine+wal/late / raw-put ${(raw / late).toFixed(2)}x, / engine+wal ${(engine / late).toFixed(2)}x`)
    if (Number.isFinite(yjs)) {
      console.log(`    ${how.padEnd(10)} wal-append / y-indexeddb ${(yjs / wal).toFixed(2)}x, engine+wal / y-indexeddb ${(yjs / engine).toFixed(2)}x`)
    }
  }
  const coalesced = medianMs(timings, 'wal-append/burst')
  const separate = medianMs(timings, 'wal-append/burst/no-coalesce')
  console.log(`    coalescing appends of one task into one transaction: ${(separate / coalesced).toFixed(2)}x on bursts of 10 batches`)
  const strict = medianMs(timings, 'wal-append/sequential/strict')
  console.log(`    durability 'strict' takes ${(strict / medianMs(timings, 'wal-append/sequential')).toFixed(2)}x the time of the default, sequential`)
}

if (isMain(import.meta.url)) {
  runAppend(walBenchArgs(process.argv)).catch((error: unknown) => {
    console.error(error)
    process.exitCode = 1
  })
}
