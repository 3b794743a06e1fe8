/**
 * Every write-ahead log browser bench, one after the other (`pnpm bench:browser:wal`).
 *
 *   node --import tsx --conditions=@tidemark/source bench/browser/wal-run-all.ts
 */
import { runAppend } from './wal-append.ts'
import { runRecovery } from './wal-recovery-1m.ts'

try {
  await runAppend()
  console.log('')
  await runRecovery()
} catch (error) {
  console.error(error)
  process.exitCode = 1
}
