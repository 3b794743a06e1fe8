/**
 * A write-ahead journal for fuzzed engines that goes through the real byte formats: every
 * operation is encoded as a log record (`encodeWalRecord`) when the engine records it, and
 * checkpoints as `encodeEngineCheckpoint` inside the checksummed envelope. Recovery decodes
 * those bytes, so a crash in a campaign also exercises the codecs on whatever the scenario
 * produced (hostile names, lone surrogates, -Infinity clocks, merged peer cells).
 */
import type { Engine, TidemarkEngine, WalOp, WriteAheadLog } from '@tidemark/engine'
import {
  decodeCheckpoint,
  decodeEngineCheckpoint,
  decodeWalRecord,
  encodeCheckpoint,
  encodeEngineCheckpoint,
  encodeWalRecord,
} from '@tidemark/idb'
import { check, checkEqual } from '../invariant.ts'

/** The part of an engine a user can see, minus the log's own size. */
export function visibleState(engine: Engine) {
  const { walRecords: _records, walBytes: _bytes, ...stats } = engine.stats()
  const results = engine.results()
  return {
    results,
    history: results.map((r) => engine.history(r.window, r.key, r.start)),
    late: engine.lateEvents(),
    watermark: engine.watermark(),
    stats,
  }
}

export class FuzzJournal implements WriteAheadLog {
  readonly records: Uint8Array[] = []
  blocked: Error | null = null
  #bytes = 0

  record(op: WalOp): Promise<void> {
    const bytes = encodeWalRecord(this.records.length + 1, op)
    this.records.push(bytes)
    this.#bytes += bytes.byteLength
    return Promise.resolve()
  }

  stats(): { walRecords: number; walBytes: number } {
    return { walRecords: this.records.length, walBytes: this.#bytes }
  }
}

/** A checkpoint as stored: envelope bytes, covering journal records `1..upToLsn`. */
export interface StoredCheckpoint {
  readonly bytes: Uint8Array
  readonly upToLsn: number
}

export function takeCheckpoint(engine: TidemarkEngine, journal: FuzzJournal): StoredCheckpoint {
  const upToLsn = journal.records.length
  return { bytes: encodeCheckpoint({ upToLsn, state: encodeEngineCheckpoint(engine.checkpoint()) }), upToLsn }
}

/**
 * "Crashes" `live`: builds a fresh engine with `make`, restores the stored checkpoint, replays
 * the journal after it (with a processing-time clock that reads NaN, so replay can only use
 * recorded times), checks that it shows exactly what `live` showed, and returns it.
 */
export function crashAndRecover(
  live: TidemarkEngine,
  make: (now: () => number) => TidemarkEngine,
  journal: FuzzJournal,
  stored: StoredCheckpoint,
  liveNow: () => number,
  step: number,
): TidemarkEngine {
  let replaying = true
  const recovered = make(() => (replaying ? Number.NaN : liveNow()))
  const envelope = decodeCheckpoint(stored.bytes)
  check(envelope.ok, 'recovery.checkpoint', () => `stored checkpoint does not decode: ${envelope.ok ? '' : envelope.reason}`, step)
  if (!envelope.ok) throw new Error('unreachable')
  check(envelope.checkpoint.upToLsn === stored.upToLsn, 'recovery.checkpoint', () => 'upToLsn changed in the envelope', step)
  recovered.restore(decodeEngineCheckpoint(envelope.checkpoint.state))
  for (let lsn = stored.upToLsn + 1; lsn <= journal.records.length; lsn++) {
    const decoded = decodeWalRecord(journal.records[lsn - 1] as Uint8Array)
    check(decoded.ok, 'recovery.wal', () => `record ${lsn} does not decode: ${decoded.ok ? '' : decoded.reason}`, step)
    if (!decoded.ok) throw new Error('unreachable')
    check(decoded.lsn === lsn, 'recovery.wal', () => `record ${lsn} decodes with lsn ${decoded.lsn}`, step)
    recovered.replay(decoded.op)
  }
  replaying = false
  checkRecovered(recovered, live, step)
  return recovered
}

/** `recovered` shows exactly what `live` showed, counts of batches refused whole included (they are logged). */
export function checkRecovered(recovered: Engine, live: Engine, step: number): void {
  checkEqual(visibleState(recovered), visibleState(live), 'recovery.state', step)
}
