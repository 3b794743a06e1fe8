import type { StreamEvent } from '../input/event.ts'
import { plainConstructor } from '../input/plainConstructor.ts'
import type { Basis } from '../windows/windowResult.ts'

export { compareEventOrder } from '../input/eventOrder.ts'

/**
 * An event in the ordered stream, with how its place in the order is known (docs/semantics.md, the ordered event stream):
 * - `proven`: its source's `seq` is gap-free up to it and `ts` never decreased along that prefix;
 * - `derived`: placed by event time alone (its source gives no usable `seq`);
 * - `fallback`: placed by a tie-break (another event has the same `ts`), or its source's clock
 *   went backwards along `seq` at or before it;
 * - `unknown`: its source's `seq` shows a gap before it, so an event of its own source that
 *   belongs earlier may still be missing.
 *
 * `proven` wins over a tie: events of different sources with one `ts` are simultaneous, and the
 * tie-break only fixes a convention between them, not the evidence about each source.
 *
 * @example
 * const e: OrderedEvent = { id: 'd1-1', source: 'd1', seq: 1, ts: 1_000, value: 3, basis: 'proven' }
 */
export interface OrderedEvent extends StreamEvent {
  readonly basis: Basis
}

/** The stream's own, writable form of an ordered event: `basis` is settled when it leaves. */
export type PendingEvent = { -readonly [K in keyof OrderedEvent]: OrderedEvent[K] }

/** Makes the ordered events, plain objects (in the ordered stream, an event waits until the watermark passes it). */
const PendingRecord = /* @__PURE__ */ plainConstructor(function (this: PendingEvent, id: string, source: string, ts: number, value: number, basis: Basis) {
  this.id = id
  this.source = source
  this.ts = ts
  this.value = value
  this.basis = basis
})

/**
 * A detached copy of a caller's event with a basis, so that later changes to the caller's
 * object cannot move an event that already waits in order. Absent optional fields stay absent.
 */
export function toPendingEvent(event: StreamEvent, basis: Basis): PendingEvent {
  const copy = new PendingRecord(event.id, event.source, event.ts, event.value, basis)
  if (event.seq !== undefined) copy.seq = event.seq
  if (event.key !== undefined) copy.key = event.key
  return copy
}
