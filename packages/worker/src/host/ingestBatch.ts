import { type Engine, OverflowError } from '@tidemark/engine'
import { isFencedError } from '@tidemark/idb'
import { batchProblem, decodeEvents, type EventBatch } from '../protocol/eventColumns.ts'
import { type WireError, wireError } from '../protocol/messages.ts'
import type { HostClient } from './hostClient.ts'

/**
 * What `ingestBatch` needs of the host it runs in.
 *
 * @example
 * ingestBatch(client, req, batch, {
 *   engine: this.#engine,
 *   credits: options.credits ?? 50_000,
 *   deposed: () => this.#deposed !== null,
 *   depose: (reason) => this.depose(reason),
 * })
 */
export interface IngestingHost {
  /** The hosted engine, or null when it is not open (or no longer). */
  readonly engine: Engine | null
  /** Events one page may have in flight (sent and not yet durable). */
  readonly credits: number
  /** Whether another host took the log; asked again when the batch's durability settles. */
  readonly deposed: () => boolean
  /** Called when a write was fenced: another host took the log. */
  readonly depose: (reason: string) => void
}

/**
 * Applies one batch a page sent and answers it twice: with its receipt (or why it was refused)
 * at once, then with its durability. A refusal says whether the page should send the batch
 * again to the next host (`retry`): yes when this host stopped or was fenced out, since the
 * next one's dedup makes a resend harmless; no when the batch itself is wrong or past the
 * page's credits.
 *
 * @example
 * case 'ingest': {
 *   const { req, batch } = message as { req: number; batch: EventBatch }
 *   ingestBatch(client, req, batch, host)
 *   return
 * }
 */
export function ingestBatch(client: HostClient, req: number, batch: EventBatch, host: IngestingHost): void {
  const refuse = (error: WireError, retry: boolean): void => client.link.send({ t: 'ingest-refused', req, error, retry }, [])
  const engine = host.engine
  if (engine === null || host.deposed()) {
    refuse({ name: 'Error', message: 'the host stopped' }, true)
    return
  }
  const problem = batchProblem(batch)
  if (problem !== null) {
    refuse({ name: 'TypeError', message: `ingest: ${problem}` }, false)
    return
  }
  const events = decodeEvents(batch)
  const n = events.length
  const credits = host.credits
  if (client.inFlight > 0 && client.inFlight + n > credits) {
    refuse(wireError(new OverflowError('worker host', `the page has ${client.inFlight} events in flight and sent ${n} more, past its ${credits} credits`)), false)
    return
  }
  let receipt: ReturnType<Engine['ingest']>
  try {
    receipt = engine.ingest(events as Parameters<Engine['ingest']>[0])
  } catch (error) {
    refuse(wireError(error), host.deposed())
    return
  }
  client.inFlight += n
  const { durable, ...counts } = receipt
  client.link.send({ t: 'receipt', req, receipt: counts }, [])
  durable.then(
    () => {
      client.inFlight -= n
      client.link.send({ t: 'durable', req }, [])
    },
    (error: unknown) => {
      client.inFlight -= n
      const fenced = isFencedError(error)
      client.link.send({ t: 'durable', req, error: wireError(error), retry: fenced || host.deposed() }, [])
      if (fenced) host.depose('another host took the log (a write was fenced)')
    },
  )
}
