/**
 * A device for the chaos test (deviceChaos.test.ts): an engine from `openEngine` over a
 * write-ahead log in a fake IndexedDB, bound to its own `Y.Doc`, joined to its room on the relay
 * with `connectRelay`, and a producer that either re-sends what was never acknowledged or
 * continues after the last seq its log holds (`ProducerMode`).
 *
 * `crash()` is a process dying: the log's claim is dropped (a commit not yet started never
 * starts), the IndexedDB transactions still running are aborted (a commit under way never lands),
 * its sockets are cut without a close frame, and the engine and its log handle are abandoned
 * without `close()`. `open()` is the reload: `openEngine` on the same IndexedDB factory, a fresh
 * `Y.Doc`, a fresh relay client.
 */
import 'fake-indexeddb/auto'
import { IDBFactory } from 'fake-indexeddb'
import * as Y from 'yjs'
import {
  boundedOutOfOrderness,
  distinct,
  type EngineOptions,
  latest,
  manual,
  quantiles,
  type StreamEvent,
  session,
  type TidemarkEngine,
  tumbling,
} from '@tidemark/engine'
import { indexedDbPersistence, openEngine } from '@tidemark/idb'
import { bindDoc, connectRelay, type Relay as RelayClient } from '@tidemark/yjs'
import { cuttableWebSocket } from '@tidemark/testkit/network'
import { signToken } from './roomClients.ts'

export const T0 = 1_700_000_040_000
/**
 * The engines' options, by profile. Every reading counts in both, so the ground truth is every
 * reading once: `manual` fires nothing; `event-time` fires and finalizes windows (a reading is at
 * most 30 s out of order, inside the 40 s bound, so no device refuses one as late), and a
 * dashboard that merges a device's backlog after a window turned final corrects it.
 */
export type ChaosProfile = 'manual' | 'event-time'

export function chaosOptions(profile: ChaosProfile): EngineOptions {
  const windows = [tumbling(60_000), session(30_000)]
  // States that travel whole in each cell and are checkpointed, replayed and merged bit for bit.
  const aggregates = { p: quantiles({ at: [0.5, 0.9] }), devices: distinct({ of: (event) => event.source }), last: latest() }
  if (profile === 'manual') return { windows, watermark: manual(), retention: Number.POSITIVE_INFINITY, aggregates }
  // Sources turn idle after 30 s of processing time: a dashboard fires windows before a device's backlog lands.
  return { windows, watermark: boundedOutOfOrderness(40_000), allowedLateness: 60_000, idleTimeout: 30_000, retention: Number.POSITIVE_INFINITY, aggregates }
}
/** Reconnects within 200 ms: the test waits for them in real time. */
export const JITTER = { baseMs: 20, capMs: 200 }

/**
 * An IndexedDB factory over `factory` whose connections' transactions still running when
 * `crash()` is called are aborted: a process that dies before a commit completes leaves nothing
 * of it, whatever it had already handed to the network.
 */
export function crashableIndexedDb(factory: IDBFactory) {
  const live = new Set<IDBTransaction>()
  const connections = new Set<IDBDatabase>()
  const watch = (db: IDBDatabase): void => {
    connections.add(db)
    const transaction = db.transaction.bind(db)
    db.transaction = ((...args: Parameters<IDBDatabase['transaction']>) => {
      const tx = transaction(...args)
      live.add(tx)
      const done = (): void => {
        live.delete(tx)
      }
      tx.addEventListener('complete', done)
      tx.addEventListener('abort', done)
      return tx
    }) as IDBDatabase['transaction']
  }
  const indexedDB = {
    open(name: string, version?: number): IDBOpenDBRequest {
      const request = factory.open(name, version)
      request.addEventListener('success', () => watch(request.result))
      return request
    },
    deleteDatabase: (name: string) => factory.deleteDatabase(name),
    databases: () => factory.databases(),
    cmp: (a: unknown, b: unknown) => factory.cmp(a, b),
  } as IDBFactory
  return {
    indexedDB,
    crash(): void {
      for (const tx of live) {
        try {
          tx.abort()
        } catch {
          // Already committing: it lands, as a commit that reached the disk before the crash does.
        }
      }
      live.clear()
      for (const db of connections) db.close()
      connections.clear()
    },
  }
}

/** Retry timers that never fire: an abandoned engine must not keep writing after its crash. */
const NO_RETRY = { setTimeout: () => 0, clearTimeout: () => undefined }

/** The `n`th reading of `source` (1-based) sampled in the producer's `generation`th session: a re-send of it is identical. */
export function reading(source: string, seq: number, keys: number, rand: (seq: number) => number, generation = 0): StreamEvent {
  // Gaps of up to 50 s between readings, so sessions both merge and split.
  return { id: `${source}-${seq}`, source, seq, ts: T0 + seq * 20_000 + Math.floor(rand(seq) * 30_000), key: `zone-${seq % keys}`, value: (seq + generation * 11) % 37 }
}

/**
 * What a producer does after a reload. `resend`: it kept the readings it never saw acknowledged
 * and sends them again (those the log holds count as duplicates). `resume`: they died with it,
 * and it continues after the last seq the log holds with new readings (docs/durability.md), so
 * a seq that died unlogged is used again for another value: a peer that had seen the dead one
 * would show it.
 */
export type ProducerMode = 'resend' | 'resume'

/** What happened to a device, for the failure report. */
export interface DeviceCounters {
  crashes: number
  lostOnCrash: number
  duplicates: number
  rejected: number
}

export class ChaosDevice {
  readonly id: string
  readonly source: string
  readonly room: string
  readonly factory = new IDBFactory()
  readonly counters: DeviceCounters = { crashes: 0, lostOnCrash: 0, duplicates: 0, rejected: 0 }
  /** The readings of the ground truth, by seq (index seq - 1): what was last sent for each seq the device still owes or holds. */
  readonly sent: StreamEvent[] = []
  /** What happened to each batch, for a failure's report. */
  readonly debug: string[] = []
  /** Highest seq whose batch is durable (acknowledged). */
  acked = 0
  engine: TidemarkEngine | null = null
  doc: Y.Doc | null = null
  client: RelayClient | null = null
  online = true
  /** How this device goes offline: its link cut under it (a lost network), or `disconnect()` (an app that knows). */
  readonly #cutOffline: boolean
  #sockets = cuttableWebSocket()
  #claim = { held: true }
  /** The open session's connections to the device's IndexedDB: a crash aborts what they have not committed. */
  #disk = crashableIndexedDb(this.factory)
  /** The next seq this session sends. */
  #next = 1
  #generation = 0
  readonly #url: () => string
  readonly #now: () => number
  readonly #errors: string[]
  readonly #rand: (seq: number) => number
  readonly #options: EngineOptions
  readonly #checkpointEvents: number
  readonly #mode: ProducerMode

  constructor(
    id: string,
    fleet: string,
    setup: { url: () => string; now: () => number; errors: string[]; rand: (seq: number) => number; options: EngineOptions; checkpointEvents: number; mode: ProducerMode; cutOffline: boolean },
  ) {
    this.id = id
    this.source = `d${id}`
    this.room = `${fleet}/${id}`
    this.#url = setup.url
    this.#now = setup.now
    this.#errors = setup.errors
    this.#rand = setup.rand
    this.#options = setup.options
    this.#checkpointEvents = setup.checkpointEvents
    this.#mode = setup.mode
    this.#cutOffline = setup.cutOffline
  }

  get running(): boolean {
    return this.engine !== null
  }

  /** Opens (or reopens after a crash) the engine from the log, binds a fresh doc and joins the room. */
  async open(): Promise<void> {
    this.#claim = { held: true }
    this.#disk = crashableIndexedDb(this.factory)
    const engine = (await this.#openEngine(this.#claim, this.#disk.indexedDB)) as TidemarkEngine
    const doc = new Y.Doc()
    bindDoc(engine, doc, { onError: (error) => this.#errors.push(`${this.id} binding: ${error.message}`) })
    // A process of its own: the dead one's sockets stay cut.
    this.#sockets = cuttableWebSocket()
    if (!this.online && this.#cutOffline) this.#sockets.cut()
    const client = connectRelay({
      url: this.#url(),
      token: () => signToken({ sub: this.id, role: 'device', rooms: [this.room], replicas: [this.id], sources: [this.source] }),
      WebSocket: this.#sockets.WebSocket,
      jitter: JITTER,
      onError: (error) => this.#errors.push(`${this.id} relay: ${error.message}`),
    })
    client.join(doc, this.room)
    if (!this.online && !this.#cutOffline) client.disconnect()
    this.engine = engine
    this.doc = doc
    this.client = client
    const prefix = engine.replica.exportState().clocks.find((clock) => clock.source === this.source)?.prefix ?? 0
    // Nothing acknowledged is lost: the log holds every seq whose batch was durable.
    if (prefix < this.acked) this.#errors.push(`${this.id}: reopened with seqs up to ${prefix}, but ${this.acked} were acknowledged`)
    this.#generation++
    this.debug.push(`open: prefix ${prefix} acked ${this.acked} sent ${this.sent.length}`)
    if (this.#mode === 'resend') this.#next = this.acked + 1
    else {
      // The log is the producer's memory now: what it holds is acknowledged, the rest died.
      this.sent.length = Math.min(this.sent.length, prefix)
      this.acked = prefix
      this.#next = prefix + 1
    }
  }

  /**
   * A reload that dies again while `openEngine` recovers (a crash loop): the claim goes after
   * `turns` turns of the event loop, and whatever that open did or does next is abandoned.
   */
  async crashWhileOpening(turns: number): Promise<void> {
    const claim = { held: true }
    const disk = crashableIndexedDb(this.factory)
    const opening = this.#openEngine(claim, disk.indexedDB).catch(() => undefined)
    for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve))
    claim.held = false
    disk.crash()
    this.counters.crashes++
    // Settled before the next open, as a dead process's transactions are.
    await opening
  }

  #openEngine(claim: { held: boolean }, indexedDB: IDBFactory) {
    const persistence = indexedDbPersistence({ name: `chaos-${this.id}`, indexedDB, claim })
    return openEngine({
      ...this.#options,
      replicaId: this.id,
      persistence,
      now: this.#now,
      timers: NO_RETRY,
      // Small: recovery is a checkpoint and a tail, and crashes land between the two.
      checkpointEvery: { events: this.#checkpointEvents },
    })
  }

  /** Ingests the next `count` readings (after any re-sends); their acknowledgement moves `acked`. */
  produce(count: number, keys: number): void {
    const engine = this.engine
    if (engine === null) return
    if (count <= 0) return
    const to = this.#next + count - 1
    const events: StreamEvent[] = []
    for (let seq = this.#next; seq <= to; seq++) {
      const event = this.sent[seq - 1] ?? reading(this.source, seq, keys, this.#rand, this.#generation)
      this.sent[seq - 1] = event
      events.push(event)
    }
    this.#next = to + 1
    const receipt = engine.ingest(events)
    this.counters.duplicates += receipt.duplicates
    this.counters.rejected += receipt.rejected
    for (const anomaly of receipt.anomalies) if (anomaly.reason !== 'duplicate') this.#errors.push(`${this.id} ingest: ${anomaly.reason} ${anomaly.detail ?? ''}`)
    const from = this.#next - count
    this.debug.push(`ingest ${from}-${to} gen ${this.#generation} accepted ${receipt.accepted} dup ${receipt.duplicates} rej ${receipt.rejected} ${receipt.anomalies.map((a) => a.reason).join(',')}`)
    receipt.durable.then(
      () => {
        this.debug.push(`durable ${from}-${to} current ${this.engine === engine}`)
        if (this.engine === engine) this.acked = Math.max(this.acked, to)
      },
      // Refused by a crash: never acknowledged.
      (error: unknown) => this.debug.push(`refused ${from}-${to} ${String(error)}`),
    )
  }

  /** Sends again what the producer holds unacknowledged since the last reload (nothing when it sent it all). */
  resend(keys: number): void {
    if (this.#next <= this.sent.length) this.produce(this.sent.length - this.#next + 1, keys)
  }

  /** The process dies: pending commits never land, the socket goes, nothing is closed. */
  crash(): void {
    if (this.engine === null) return
    this.#claim.held = false
    this.#disk.crash()
    // Its sockets die with it, without a close frame; its client's timers die too.
    this.#sockets.cut()
    this.client?.destroy()
    this.counters.crashes++
    this.counters.lostOnCrash += this.#next - 1 - this.acked
    this.engine = null
    this.doc = null
    this.client = null
  }

  setOnline(online: boolean): void {
    this.online = online
    if (this.#cutOffline) {
      if (online) this.#sockets.restore()
      else this.#sockets.cut()
    } else if (online) this.client?.connect()
    else this.client?.disconnect()
  }

  /** Whether the relay acknowledged everything this device's doc holds, and every reading is acknowledged. */
  settled(): boolean {
    const status = this.engine?.syncStatus()
    return status !== undefined && status.state === 'connected' && status.pendingLocalUpdates === 0 && this.acked === this.sent.length
  }

  /** A clean stop (a tab closed): the socket closes, the engine writes its last checkpoint. */
  async close(): Promise<void> {
    this.client?.destroy()
    const engine = this.engine
    this.engine = null
    this.doc = null
    this.client = null
    await engine?.close()
  }
}
