import type { Accumulation, Anomaly, EngineStats, LateEvent, SyncStatus } from '@tidemark/engine'
import type { RecoveryReport } from '@tidemark/idb'
import type { EventBatch } from './eventColumns.ts'
import type { WindowRows } from './windowRows.ts'

/** Bumped when a message changes shape; a page and a host of different versions refuse each other. */
export const PROTOCOL_VERSION = 4

/**
 * An error as it crosses a port: its name, message and own plain fields (the structured clone
 * keeps no class). Rebuilt, it answers the type guards that read its name
 * (`isLogConfigurationError`, `isOverflowError`, `isQuotaError`, …) and keeps their fields.
 */
export interface WireError {
  readonly name: string
  readonly message: string
  /** The error's own enumerable fields whose values are strings, numbers, booleans or null (`logged`, `expected`, `buffer`, …). */
  readonly fields?: Readonly<Record<string, WireField>>
}

/** A field of an error that crosses a port as it is. */
export type WireField = string | number | boolean | null

/**
 * How the host runs: a SharedWorker, a leader tab's worker, or this tab's own worker.
 *
 * @example
 * const mode: HostMode = engine.connection().mode // 'shared' where the browser has SharedWorker
 */
export type HostMode = 'shared' | 'leader' | 'single'

/** The late lane's news in a frame: entries appended since the last frame (or all of it, `replace`). */
export interface LateNews {
  /** Entries ever put on the lane (`lateLane + lateLaneTrimmed`): how far the page is now. */
  readonly position: number
  readonly entries: readonly LateEvent[]
  readonly replace: boolean
}

/**
 * What changed since the last frame this page acknowledged: one row per window (its last
 * change) in accumulating mode, every pane of it in discarding mode; the history rows of the
 * windows it watches, and the scalars that moved. Or, `replace`, the whole state, which
 * replaces the page's (a page whose backlog outgrew the live windows).
 */
export interface FrameMessage {
  readonly t: 'frame'
  readonly frame: number
  readonly rows: WindowRows
  /** The rows are every live window and the histories of the watched ones: the page's state is replaced. */
  readonly replace?: true
  readonly watermark: number
  readonly stats?: EngineStats
  readonly sync?: SyncStatus
  readonly late?: LateNews
}

/** A page's first message to a host. */
export interface HelloMessage {
  readonly t: 'hello'
  readonly v: number
  /** The page's tab id (the host watches its Web Lock to notice the tab is gone). */
  readonly tab: string
  /** The app's `config` of `connectEngine`; the host's `engine` and `setup` get the first tab's. */
  readonly config: unknown
  /**
   * The source the tab claimed (`connectEngine`'s `claim`): the host says in its welcome whether
   * its engine holds a finish of it. A host without the field ignores it, and a page without it
   * never reads the answer, so the protocol version stays.
   */
  readonly claim?: string
}

/** Pages' requests. */
export type PageMessage =
  | HelloMessage
  | { readonly t: 'ingest'; readonly req: number; readonly batch: EventBatch }
  | { readonly t: 'ack'; readonly frame: number }
  /** `end` names one window of a cumulating spec (its windows share their start). */
  | { readonly t: 'watch-history'; readonly window: string; readonly key: string; readonly start: number; readonly end?: number }
  | { readonly t: 'unwatch-history'; readonly window: string; readonly key: string; readonly start: number; readonly end?: number }
  | { readonly t: 'call'; readonly req: number; readonly call: HostCall }
  | { readonly t: 'bye' }

/** The calls a page makes that answer with a value (or nothing). */
export type HostCall =
  | { readonly op: 'nextSeq'; readonly source: string }
  | { readonly op: 'advance'; readonly to: number }
  | { readonly op: 'tick' }
  | { readonly op: 'finish'; readonly source: string }
  | { readonly op: 'command'; readonly name: string; readonly payload: unknown }

/** One aggregate of the host engine: its name in `result.aggregates`, and what shapes its state. */
export interface AggregateIdentity {
  readonly name: string
  readonly configuration: string
}

/** The options of the engine the page mirrors: for window expiry, what its panes carry, and its aggregates (by name). */
export interface MirroredOptions {
  readonly allowedLateness: number
  readonly retention: number
  readonly accumulation: Accumulation
  readonly aggregates: readonly AggregateIdentity[]
}

/** A host's answer to `hello`: who it is, the credits, and the whole state as a first frame. */
export interface WelcomeMessage {
  readonly t: 'welcome'
  readonly v: number
  readonly instance: string
  readonly epoch: number
  readonly mode: HostMode
  /** Events this page may have sent and not yet seen durable. */
  readonly credits: number
  readonly options: MirroredOptions
  readonly recovery: RecoveryReport | null
  readonly frame: FrameMessage
  /** The source the page's hello claimed is finished in the host's engine (the page retires its claim once that finish is durable). */
  readonly finished?: true
}

/** The counts of an ingest receipt; its `durable` follows as a `durable` message. */
export interface ReceiptCounts {
  readonly accepted: number
  readonly late: number
  readonly duplicates: number
  readonly beyondLateness: number
  readonly rejected: number
  readonly anomalies: readonly Anomaly[]
}

/** The host's messages to one page. */
export type HostMessage =
  | WelcomeMessage
  | FrameMessage
  | { readonly t: 'receipt'; readonly req: number; readonly receipt: ReceiptCounts }
  /** The batch was not applied; `retry`: send it to the next host (this one stopped). */
  | { readonly t: 'ingest-refused'; readonly req: number; readonly error: WireError; readonly retry: boolean }
  /** `retry`: not durable here because this host lost the log; send the batch to the next host. */
  | { readonly t: 'durable'; readonly req: number; readonly error?: WireError; readonly retry?: boolean }
  | { readonly t: 'reply'; readonly req: number; readonly value?: unknown; readonly error?: WireError; readonly retry?: boolean }
  /**
   * The host will not serve this page (another protocol version, or `error`: it could not start)
   * or stopped (`deposed`: another host took the log).
   */
  | { readonly t: 'refused'; readonly reason: string; readonly deposed?: boolean; readonly error?: WireError }
  /**
   * The host heard the page's hello and welcomes it once its engine is open: it is alive, only not
   * ready. `instance`, once the host holds its lock: the page watches that lock meanwhile, so a host
   * that crashes while it starts is noticed.
   */
  | { readonly t: 'waiting'; readonly instance?: string }
  /**
   * The source the page's hello claimed is finished in the host's engine, by a finish that reached
   * it after the welcome (merged from a peer): as `welcome.finished`. A page without this message ignores it.
   */
  | { readonly t: 'finished' }

/** A leader tab's host announces itself on the tab channel (leader mode only). */
export interface BeatMessage {
  readonly t: 'beat'
  readonly epoch: number
  readonly instance: string
  /** The tab whose worker this is. */
  readonly tab: string
  /** The engine is open and answers `hello`. */
  readonly ready: boolean
}

/** A follower announces it stole leadership from a silent leader of `epoch` (others then hold off). */
export interface StealMessage {
  readonly t: 'steal'
  readonly epoch: number
  readonly tab: string
}

/** The first message a dedicated host worker gets from its tab. */
export interface StartMessage {
  readonly t: 'start'
  readonly v: number
  readonly mode: 'leader' | 'single'
  readonly tab: string
  /** Take the log from a silent writer instead of waiting for it. */
  readonly steal: boolean
  readonly heartbeatMs: number
}

/** The error as it crosses a port. */
export function wireError(error: unknown): WireError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) }
  const fields: Record<string, WireField> = {}
  let some = false
  for (const [field, value] of Object.entries(error)) {
    if (OWN_ERROR_FIELDS.has(field)) continue
    if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      fields[field] = value
      some = true
    }
  }
  return some ? { name: error.name, message: error.message, fields } : { name: error.name, message: error.message }
}

/** What every Error has, or what `errorFromWire` sets itself. */
const OWN_ERROR_FIELDS: ReadonlySet<string> = new Set(['name', 'message', 'stack', 'cause'])

/** An Error rebuilt from a `WireError`: same name, message and plain fields. */
export function errorFromWire(wire: WireError): Error {
  const error = new Error(wire.message)
  error.name = wire.name
  if (wire.fields !== undefined) Object.assign(error, wire.fields)
  return error
}
