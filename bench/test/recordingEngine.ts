/**
 * A Tidemark contender run once on a recording engine, swapped in through `engineBuild.create`
 * (as the README says a script may): the options it is given, every batch, the processing time
 * of each ingest, the receipts and the changes. For the profile tests; nothing is timed.
 */
import { createEngine, type EngineOptions, type IngestReceipt, type StreamEvent, type WindowChange } from '@tidemark/engine'
import type { Contender, Outcome } from '../harness/contender.ts'
import { NO_PROBE } from '../harness/memory.ts'
import type { ProfileDefinition } from '../harness/profile.ts'
import { engineBuild } from '../peers/tidemark.ts'

/** What one run of a Tidemark contender gave its engine, and what the engine answered. */
export interface Seen {
  readonly options: EngineOptions
  readonly batches: readonly (readonly StreamEvent[])[]
  /** Processing time (`now()`) at each ingest. */
  readonly nows: readonly number[]
  readonly receipts: readonly IngestReceipt[]
  /** Every change the engine emitted, in order. */
  readonly changes: readonly WindowChange[]
  readonly engines: number
  /** The contender's outcome: its end gauges, counts and watermark. */
  readonly outcome: Outcome
}

const NOTHING_INGESTED: IngestReceipt = { accepted: 0, late: 0, duplicates: 0, beyondLateness: 0, rejected: 0, anomalies: [], durable: Promise.resolve() }

/**
 * Runs `contender` once on a recording engine swapped in through `engineBuild.create`.
 * `batchesOnly`: record what the contender hands the engine without ingesting it (the engine
 * stays empty; its receipts are empty), where only the workload is read.
 */
export function seenBy(contender: Contender, { batchesOnly = false }: { readonly batchesOnly?: boolean } = {}): Seen {
  const seen = { options: undefined as unknown as EngineOptions, batches: [] as StreamEvent[][], nows: [] as number[], receipts: [] as IngestReceipt[], changes: [] as WindowChange[], engines: 0, outcome: undefined as unknown as Outcome }
  const realCreate = engineBuild.create
  engineBuild.create = (options) => {
    seen.options = options
    seen.engines++
    const engine = createEngine(options)
    engine.subscribe((changes) => {
      seen.changes.push(...changes)
    })
    return new Proxy(engine, {
      get(target, property) {
        if (property === 'ingest') {
          return (batch: readonly StreamEvent[]) => {
            seen.batches.push([...batch])
            seen.nows.push((options.now as () => number)())
            const receipt = batchesOnly ? NOTHING_INGESTED : target.ingest(batch)
            seen.receipts.push(receipt)
            return receipt
          }
        }
        const value: unknown = Reflect.get(target, property, target)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
  }
  try {
    seen.outcome = contender.run({ probe: NO_PROBE, record: false })
    seen.outcome.close?.()
  } finally {
    engineBuild.create = realCreate
  }
  return seen
}

export function contender(definition: ProfileDefinition, name = 'tidemark'): Contender {
  const found = definition.contenders.find((c) => c.name === name)
  if (found === undefined) throw new Error(`${definition.name} has no contender ${name}`)
  return found
}

export const names = (definition: ProfileDefinition): string[] => definition.contenders.map((c) => c.name)
export const windowIds = (seen: Seen): string[] => (Array.isArray(seen.options.windows) ? seen.options.windows : [seen.options.windows]).map((w) => w.id)
