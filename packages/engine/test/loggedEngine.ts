import { TidemarkEngine } from '../src/core/engine.ts'
import type { WalOp } from '../src/recovery/writeAheadLog.ts'

/** An engine whose log is an array: each operation it records, copied (as a real log encodes it at once). */
export function loggedEngine(options: ConstructorParameters<typeof TidemarkEngine>[0]): { engine: TidemarkEngine; ops: WalOp[] } {
  const engine = new TidemarkEngine(options)
  const ops: WalOp[] = []
  const record = (op: WalOp): Promise<void> => {
    ops.push(structuredClone(op))
    return Promise.resolve()
  }
  engine.attachLog({ record, blocked: null, stats: () => ({ walRecords: ops.length, walBytes: 0 }) })
  return { engine, ops }
}
