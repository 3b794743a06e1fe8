import type { StreamEvent } from '@tidemark/engine'

/**
 * An ingest batch on its way from a page to the host. Well-formed events travel as columns
 * (ids as one string array, sources and keys through a string table, times, values and seqs
 * in one Float64Array), which the structured clone copies far faster than as many small
 * objects. A batch with any event outside that shape travels as the objects themselves, so
 * the engine sees exactly what the caller passed and reports each bad input with its reason.
 */
export type EventBatch = EventColumns | EventObjects

/** The column form: event `i` is `ids[i]`, `strings[ints[2i]]` (source), key `strings[ints[2i+1]]` (-1: none), `nums[3i..3i+2]` = ts, value, seq (NaN: none). */
export interface EventColumns {
  readonly form: 'columns'
  readonly ids: readonly string[]
  readonly strings: readonly string[]
  readonly ints: Int32Array<ArrayBuffer>
  readonly nums: Float64Array<ArrayBuffer>
}

/** The object form, for batches holding an event the column form cannot carry unchanged. */
export interface EventObjects {
  readonly form: 'objects'
  readonly events: readonly unknown[]
}

/** Whether `event` has exactly the shape the column form keeps (it may still be refused by the engine, e.g. a NaN `ts`). */
function fitsColumns(event: unknown): event is StreamEvent {
  if (typeof event !== 'object' || event === null) return false
  const e = event as Record<string, unknown>
  if (typeof e.id !== 'string' || typeof e.source !== 'string' || typeof e.ts !== 'number' || typeof e.value !== 'number') return false
  const seq = e.seq
  if (seq !== undefined && !(typeof seq === 'number' && Number.isSafeInteger(seq) && seq >= 1)) return false
  return e.key === undefined || typeof e.key === 'string'
}

/**
 * Encodes one batch for the host: columns when every event fits them, else the objects.
 *
 * @example
 * const batch = encodeEvents([{ id: 'd1#1', source: 'd1', seq: 1, ts: 1_000, key: 'temp', value: 21 }])
 * batch.form // 'columns'
 */
export function encodeEvents(events: readonly unknown[]): EventBatch {
  const n = events.length
  const ids: string[] = new Array(n)
  const strings: string[] = []
  const index = new Map<string, number>()
  const ints = new Int32Array(n * 2)
  const nums = new Float64Array(n * 3)
  const intern = (text: string): number => {
    let at = index.get(text)
    if (at === undefined) {
      at = strings.length
      strings.push(text)
      index.set(text, at)
    }
    return at
  }
  for (let i = 0; i < n; i++) {
    const event = events[i]
    if (!fitsColumns(event)) return { form: 'objects', events: events.slice() }
    ids[i] = event.id
    ints[2 * i] = intern(event.source)
    ints[2 * i + 1] = event.key === undefined ? -1 : intern(event.key)
    nums[3 * i] = event.ts
    nums[3 * i + 1] = event.value
    nums[3 * i + 2] = event.seq ?? Number.NaN
  }
  return { form: 'columns', ids, strings, ints, nums }
}

/** Events in the batch. */
export function batchSize(batch: EventBatch): number {
  return batch.form === 'columns' ? batch.ids.length : batch.events.length
}

/**
 * The events of a batch as the host ingests them: the same fields the caller gave, and no
 * others (the engine reads no others).
 *
 * @example
 * decodeEvents(encodeEvents(events)) // deep-equals events, for events of the column shape
 */
export function decodeEvents(batch: EventBatch): unknown[] {
  if (batch.form === 'objects') return batch.events.slice()
  const { ids, strings, ints, nums } = batch
  const n = ids.length
  const events: StreamEvent[] = new Array(n)
  for (let i = 0; i < n; i++) {
    const keyAt = ints[2 * i + 1] as number
    const seq = nums[3 * i + 2] as number
    const event: { -readonly [K in keyof StreamEvent]: StreamEvent[K] } = {
      id: ids[i] as string,
      source: strings[ints[2 * i] as number] as string,
      ts: nums[3 * i] as number,
      value: nums[3 * i + 1] as number,
    }
    if (!Number.isNaN(seq)) event.seq = seq
    if (keyAt >= 0) event.key = strings[keyAt] as string
    events[i] = event
  }
  return events
}

/**
 * Why `batch` cannot cross to the host's worker (a port or the tab channel copies it with the
 * structured clone), naming the first event that cannot be copied (a function, a symbol, a DOM
 * node as a field); null when it can. The column form always can. Only the object form, which
 * carries events as they were given, is cloned here, one event at a time only after the whole
 * batch failed.
 *
 * @example
 * cloneProblem(encodeEvents([{ id: 'a', source: 's', ts: 1, value: () => 1 }]))
 * // "event 0 (id 'a') cannot be sent to the engine's host: DataCloneError: () => 1 could not be cloned."
 */
export function cloneProblem(batch: EventBatch): string | null {
  if (batch.form === 'columns') return null
  const events = batch.events
  try {
    structuredClone(events)
    return null
  } catch (whole) {
    for (let i = 0; i < events.length; i++) {
      try {
        structuredClone(events[i])
      } catch (error) {
        const id = (events[i] as { id?: unknown } | null)?.id
        return `event ${i}${typeof id === 'string' ? ` (id '${id}')` : ''} cannot be sent to the engine's host: ${describe(error)}`
      }
    }
    return `the batch cannot be sent to the engine's host: ${describe(whole)}`
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

/** Why a received batch cannot be decoded, or null when it can: the host checks what a page sent. */
export function batchProblem(batch: unknown): string | null {
  if (typeof batch !== 'object' || batch === null) return 'the batch is not an object'
  const b = batch as Record<string, unknown>
  if (b.form === 'objects') return Array.isArray(b.events) ? null : 'the object form has no events array'
  if (b.form !== 'columns') return `unknown batch form ${String(b.form)}`
  const { ids, strings, ints, nums } = b
  if (!Array.isArray(ids) || !Array.isArray(strings) || !(ints instanceof Int32Array) || !(nums instanceof Float64Array)) {
    return 'the column form lacks ids, strings, ints or nums'
  }
  if (ints.length !== ids.length * 2 || nums.length !== ids.length * 3) return 'the columns have different lengths'
  for (let i = 0; i < ints.length; i++) {
    const at = ints[i] as number
    if (at >= strings.length || (at < 0 && (i % 2 === 0 || at !== -1))) return `string index ${at} is out of range`
  }
  return null
}
