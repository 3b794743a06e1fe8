import type { AggregateDefinitions, Engine, EngineOptions, NoAggregates } from '@tidemark/engine'
import { assertKnownOptions } from '@tidemark/engine/adapter'
import type { ArchivePort, CheckpointPolicy } from '@tidemark/idb'
import type { HostMode } from '../protocol/messages.ts'

/**
 * What a host's `setup` and `commands` get: the engine, the first page's `config`, and who the
 * host is.
 *
 * @example
 * setup({ engine, config }) {
 *   const { relayUrl, tokenUrl, room } = config as { relayUrl: string; tokenUrl: string; room: string }
 *   const doc = new Y.Doc()
 *   bindDoc(engine, doc)
 *   // A device token names the replica it may write: this engine's.
 *   const token = async () => (await (await fetch(`${tokenUrl}?replica=${engine.replica.replicaId}`)).json()).token
 *   const relay = connectRelay({ url: relayUrl, token })
 *   relay.join(doc, room)
 *   return () => relay.destroy()
 * }
 */
export interface HostContext<A extends AggregateDefinitions = NoAggregates> {
  /** The engine every tab shares (from `openEngine`, or `createEngine` with `log: false`). */
  readonly engine: Engine<A>
  /** The `config` the first page passed to `connectEngine` (later pages' are not used). */
  readonly config: unknown
  readonly mode: HostMode
  /** A random id of this host instance: every page of the origin sees the same one. */
  readonly instance: string
  /** The log's writer epoch (one more per host that ever opened it); a timestamp with `log: false`. */
  readonly epoch: number
}

/**
 * The write-ahead log of a hosted engine: one IndexedDB database per engine name
 * (`logDatabaseName(name)` of `@tidemark/idb`), written by one host at a time.
 *
 * @example
 * hostEngine({ name: 'fleet', engine: { windows: tumbling(60_000) }, log: { durability: 'strict', checkpointEvery: { events: 50_000 } } })
 */
export interface HostLogOptions {
  /** IndexedDB transaction durability (see `indexedDbPersistence`); default the browser's. */
  readonly durability?: IDBTransactionDurability
  /** Checkpoint cadence (see `openEngine`). */
  readonly checkpointEvery?: Partial<CheckpointPolicy>
  /** The final-window archive, `finalArchive()` from `@tidemark/idb/archive`. */
  readonly archive?: ArchivePort
}

/**
 * Options of `hostEngine`: the app's worker file passes them. `name` and `engine` are required.
 * `A`: the engine's aggregates (the type of its `aggregates` option), which type the engine
 * `setup` and `commands` get.
 *
 * @example
 * const options: HostEngineOptions = {
 *   name: 'fleet',
 *   engine: { windows: tumbling(60_000), allowedLateness: 30_000 },
 *   setup: ({ engine }) => {
 *     const doc = new Y.Doc()
 *     bindDoc(engine, doc)
 *     const relay = connectRelay({ url: 'wss://relay.example.com', token: () => fetchToken(engine.replica.replicaId) })
 *     relay.join(doc, 'fleet-a/d07')
 *     return () => relay.destroy()
 *   },
 * }
 */
export interface HostEngineOptions<A extends AggregateDefinitions = NoAggregates> {
  /** The same name as the pages' `connectEngine({ name })`: it names the locks, the tab channel and the log. */
  readonly name: string
  /** The engine's options, or a function of the first page's `config` that returns them. */
  readonly engine: EngineOptions<A> | ((config: unknown) => EngineOptions<A> | Promise<EngineOptions<A>>)
  /** The write-ahead log (default `{}`: IndexedDB); `false` for an engine that starts empty on every host start. */
  readonly log?: false | HostLogOptions
  /**
   * Runs once the engine is open, before any page is welcomed: connect the engine's providers
   * here (`bindDoc`, `connectRelay`, `BroadcastChannelProvider`, or another Yjs provider), so the origin has
   * one socket however many tabs are open. May return (or resolve to) a cleanup function, run
   * when the host stops.
   */
  readonly setup?: (context: HostContext<A>) => (() => void) | undefined | Promise<(() => void) | undefined>
  /** App commands a page runs with `engine.command(name, payload)`; each returns (or resolves to) a structured-cloneable value. */
  readonly commands?: Readonly<Record<string, (payload: unknown, context: HostContext<A>) => unknown>>
  /** Events one page may have sent and not yet seen durable (default 50,000); more wait on the page. */
  readonly credits?: number
  /** How often changes go to the pages, ms (default 16, one frame at 60 Hz). */
  readonly frameMs?: number
}

const HOST_OPTION_KEYS: readonly (keyof HostEngineOptions)[] = ['name', 'engine', 'log', 'setup', 'commands', 'credits', 'frameMs']
const LOG_OPTION_KEYS: readonly (keyof HostLogOptions)[] = ['durability', 'checkpointEvery', 'archive']

/** Throws a TypeError or RangeError naming the first bad option. */
export function checkHostOptions(options: HostEngineOptions): void {
  if (typeof options !== 'object' || options === null) throw new TypeError('hostEngine needs an options object { name, engine }')
  assertKnownOptions('hostEngine', options, HOST_OPTION_KEYS)
  const { name, engine, log, setup, commands, credits, frameMs } = options
  if (typeof name !== 'string' || name.length === 0 || name.length > 200) throw new TypeError(`hostEngine: name must be a non-empty string of at most 200 characters, got ${String(name)}`)
  if (typeof engine !== 'function' && (typeof engine !== 'object' || engine === null)) {
    throw new TypeError(`hostEngine: engine must be the engine's options or a function of the page's config returning them, got ${String(engine)}`)
  }
  if (log !== undefined && log !== false) {
    if (typeof log !== 'object' || log === null) throw new TypeError(`hostEngine: log must be false or an object, got ${String(log)}`)
    assertKnownOptions('hostEngine: log', log, LOG_OPTION_KEYS)
  }
  if (setup !== undefined && typeof setup !== 'function') throw new TypeError('hostEngine: setup must be a function')
  if (commands !== undefined) {
    if (typeof commands !== 'object' || commands === null) throw new TypeError('hostEngine: commands must be an object of functions')
    for (const [command, run] of Object.entries(commands)) {
      if (typeof run !== 'function') throw new TypeError(`hostEngine: commands.${command} must be a function`)
    }
  }
  if (credits !== undefined && !(Number.isSafeInteger(credits) && credits >= 1)) throw new RangeError(`hostEngine: credits must be an integer >= 1, got ${String(credits)}`)
  if (frameMs !== undefined && !(typeof frameMs === 'number' && Number.isFinite(frameMs) && frameMs >= 0)) {
    throw new RangeError(`hostEngine: frameMs must be a finite number of ms >= 0, got ${String(frameMs)}`)
  }
}
