import { plainConstructor } from './plainConstructor.ts'

/**
 * One reading from a device or replica.
 *
 * @example
 * const event: StreamEvent = { id: 'd1-7', source: 'd1', seq: 7, ts: 1_700_000_060_000, key: 'temp', value: 21.5 }
 */
export interface StreamEvent {
  /** Unique per event; the dedup key when `seq` is absent. */
  readonly id: string
  /** Producing device or replica. */
  readonly source: string
  /** Per-source sequence number, 1-based, gap-free when complete. */
  readonly seq?: number
  /** Event time, ms since epoch, finite. */
  readonly ts: number
  /** Series key (metric, entity); default `''`. */
  readonly key?: string
  /** Finite measurement. */
  readonly value: number
}

/** Longest accepted `id`, `source` or `key`, in UTF-16 code units. */
export const MAX_NAME_LENGTH = 1024

/** Largest accepted `|ts|`: about ±285 years either side of 1970 (1684-07-28 to 2255-06-05), so `ts + size` never loses precision. */
export const MAX_ABS_TS = 2 ** 53 / 1000

/** A detached, plain copy of a caller's event: for the late lane, and for placing an event that is not a plain object. */
export function copyStreamEvent(event: StreamEvent): StreamEvent {
  // Each field read once: a getter read again could answer otherwise.
  const { id, source, ts, value, seq, key } = event
  return streamEventOf(id, source, ts, value, seq, key)
}

/** A `StreamEvent` being built: its fields writable. */
type EventFields = { -readonly [K in keyof StreamEvent]: StreamEvent[K] }

/** Makes the engine's copies of events, plain objects (a copy in the late lane lives long). */
const EventRecord = /* @__PURE__ */ plainConstructor(function (this: EventFields, id: string, source: string, ts: number, value: number) {
  this.id = id
  this.source = source
  this.ts = ts
  this.value = value
})

/**
 * A plain event of fields already read; absent optional fields stay absent.
 *
 * @example
 * streamEventOf('d1-7', 'd1', 1_000, 21.5, 7, undefined) // { id: 'd1-7', source: 'd1', ts: 1000, value: 21.5, seq: 7 }
 */
export function streamEventOf(id: string, source: string, ts: number, value: number, seq: number | undefined, key: string | undefined): StreamEvent {
  const copy = new EventRecord(id, source, ts, value)
  if (seq !== undefined) copy.seq = seq
  if (key !== undefined) copy.key = key
  return copy
}
