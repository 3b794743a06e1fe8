import type { Engine, StreamEvent } from '@tidemark/engine'
import { indexedDbPersistence, openEngine, type Persistence, recoveryReport } from '@tidemark/idb'
import { bindDoc, syncStatusTracker } from '@tidemark/yjs'
import * as Y from 'yjs'
import { DocLinks } from './docLinks.ts'
import { type DeviceStatus, type RecoveryNote, sameStatus } from './deviceStatus.ts'
import { type FleetSettings, fleetEngineOptions } from './fleetSettings.ts'
import { deviceDatabaseName, type FleetWiring } from './fleetWiring.ts'
import type { Prng } from './prng.ts'
import { type DeviceProfile, type ProducerFaults, ReadingProducer } from './readingProducer.ts'

export interface DeviceNodeOptions {
  readonly profile: DeviceProfile
  readonly faults: ProducerFaults
  readonly rng: Prng
  readonly settings: FleetSettings
  readonly wiring: FleetWiring
  readonly epoch: string
  /** Processing-time clock for the producer, the engine and the sync status. */
  readonly now: () => number
  /** Start with the links up (default true). */
  readonly online?: boolean
  /** How long a crashed device stays down before it reopens (default 1.5 s). */
  readonly rebootMs?: number
}

/** One life of the device between crashes: its document, engine, log and links. */
interface Incarnation {
  readonly doc: Y.Doc
  readonly engine: Engine
  readonly persistence: Persistence
  /** The write-ahead log's claim: a crash ends it, so the dropped engine can never write again. */
  readonly claim: { held: boolean }
  readonly links: DocLinks
}

const DEFAULT_REBOOT_MS = 1_500

/**
 * One simulated device: a reading producer, and its own engine over its own `Y.Doc` and
 * IndexedDB write-ahead log. It ingests every upload into that engine (log before apply);
 * the engine writes the lattice cells into the doc, and the doc's link (its room on the relay,
 * with a token for that room, its replica and its source; or its tab channel when there is no
 * relay) carries them to the dashboards. Nothing else leaves the device.
 *
 * `crash()` drops the engine without `close()`: no last checkpoint, links cut, the log's
 * claim ended, as if the tab died. After the reboot delay, `openEngine` recovers it from
 * IndexedDB (checkpoint + log tail) and the device continues its seq from what the log
 * holds. Readings sampled but not yet ingested die with it: they were never acknowledged.
 *
 * @example
 * const node = await DeviceNode.open({ profile, rng, faults: DEFAULT_FAULTS, settings, wiring, epoch, now: Date.now })
 * node.step(Date.now(), true)      // samples, ingests a due upload into its own engine
 * node.setOnline(false)            // its link down, log keeps growing
 * node.crash(Date.now())           // dropped without close; reopens from IndexedDB on a later step
 */
export class DeviceNode {
  readonly profile: DeviceProfile
  readonly #options: DeviceNodeOptions
  #incarnation: Incarnation | null = null
  #producer: ReadingProducer | null = null
  #phase: DeviceStatus['phase'] = 'opening'
  #online: boolean
  #rebootAt = Number.POSITIVE_INFINITY
  #reopening: Promise<void> | null = null
  #recovery: RecoveryNote | null = null
  #error: string | null = null
  #offlineSince: number | null = null
  #counters = { accepted: 0, duplicates: 0, rejected: 0, durable: 0, lostUnacked: 0, crashes: 0, offlineReadings: 0 }
  #status: DeviceStatus | null = null

  private constructor(options: DeviceNodeOptions) {
    this.profile = options.profile
    this.#options = options
    this.#online = options.online ?? true
    if (!this.#online) this.#offlineSince = options.now()
  }

  /** Opens the device: recovers its log (empty the first time) and connects its links. */
  static async open(options: DeviceNodeOptions): Promise<DeviceNode> {
    const node = new DeviceNode(options)
    await node.#openIncarnation()
    return node
  }

  get id(): string {
    return this.profile.id
  }

  get phase(): DeviceStatus['phase'] {
    return this.#phase
  }

  /** The engine of the current incarnation; null while rebooting or closed. */
  get engine(): Engine | null {
    return this.#incarnation?.engine ?? null
  }

  /** Resolves once a reboot in progress has reopened the engine (at once when none is). */
  async whenRunning(): Promise<void> {
    await this.#reopening
  }

  /**
   * Advances the device to `now`: starts a due reopen, samples (when `producing`), and
   * ingests a due upload into its own engine.
   */
  step(now: number, producing: boolean): void {
    if (this.#phase === 'rebooting' && now >= this.#rebootAt && this.#reopening === null) {
      this.#reopening = this.#openIncarnation().finally(() => {
        this.#reopening = null
      })
    }
    const incarnation = this.#incarnation
    const producer = this.#producer
    if (this.#phase !== 'running' || incarnation === null || producer === null || !producing) return
    const upload = producer.poll(now)
    if (upload !== null) void this.#ingest(incarnation.engine, upload)
  }

  /** Producing again after a pause: no catch-up burst for the time spent paused. */
  resume(now: number): void {
    this.#producer?.resume(now)
  }

  /** Connects or disconnects the device's links; its engine keeps ingesting either way. */
  setOnline(online: boolean): void {
    if (online === this.#online) return
    this.#online = online
    if (online) {
      this.#offlineSince = null
      this.#counters.offlineReadings = 0
    } else {
      this.#offlineSince = this.#options.now()
    }
    this.#incarnation?.links.setOnline(online)
  }

  get online(): boolean {
    return this.#online
  }

  /**
   * Kills the device: the engine is dropped without `close()`, its links cut and its log
   * released as a dying tab's would be. Returns the readings lost with it (sampled, never
   * ingested). It reopens from IndexedDB after the reboot delay (see `step`).
   */
  crash(now: number): number {
    const incarnation = this.#incarnation
    if (this.#phase !== 'running' || incarnation === null) return 0
    const lost = this.#producer?.buffered ?? 0
    incarnation.claim.held = false
    incarnation.links.destroy()
    // Appends already issued finish; nothing after them is written. No checkpoint, no close.
    void incarnation.persistence.close()
    this.#incarnation = null
    this.#producer = null
    this.#phase = 'rebooting'
    this.#rebootAt = now + (this.#options.rebootMs ?? DEFAULT_REBOOT_MS)
    this.#counters.lostUnacked += lost
    this.#counters.crashes++
    return lost
  }

  /** The device as the tables show it; the same object while nothing in it changed. */
  status(): DeviceStatus {
    const incarnation = this.#incarnation
    const stats = incarnation?.engine.stats()
    const sync = incarnation?.engine.syncStatus()
    const relay = incarnation?.links.relayLink() ?? null
    const hasRelay = this.#options.wiring.relay !== null
    const next: DeviceStatus = {
      id: this.id,
      epoch: this.#options.epoch,
      phase: this.#phase,
      online: this.#online,
      offlineSince: this.#offlineSince,
      syncState: sync?.state ?? 'offline',
      pending: sync?.pendingLocalUpdates ?? 0,
      lastSync: sync?.lastSync ?? null,
      relayState: hasRelay ? (relay?.state ?? 'offline') : null,
      relayRefusal: relay?.refusal ?? null,
      skewMs: this.profile.skewMs,
      seq: this.#producer?.seq ?? 0,
      ...this.#counters,
      walRecords: stats?.walRecords ?? 0,
      walBytes: stats?.walBytes ?? 0,
      docBytes: stats?.docBytes ?? 0,
      recovery: this.#recovery,
      error:
        this.#error ??
        stats?.persistenceError ??
        stats?.replicationError ??
        incarnation?.links.relayError() ??
        conflictOf(stats?.anomalies.source_conflict ?? 0, this.id),
    }
    if (this.#status !== null && sameStatus(this.#status, next)) return this.#status
    this.#status = next
    return next
  }

  /**
   * A clean shutdown: the device uploads what it sampled (sampling up to now unless
   * `producing` is false, as while paused) and waits for that batch to commit, then the
   * engine writes a last checkpoint and releases its log. The page that opens the log next
   * (a `?device=` tab taking over) finds every reading and continues the seq after them,
   * even when this one closes before its first upload was due.
   */
  async close(producing = true): Promise<void> {
    await this.#reopening
    const incarnation = this.#incarnation
    const producer = this.#producer
    this.#incarnation = null
    this.#producer = null
    this.#phase = 'closed'
    if (incarnation === null) return
    const upload = producer?.flush(producing ? this.#options.now() : null) ?? null
    // Links still up: once durable, its cells go to the peers from here too.
    if (upload !== null) await this.#ingest(incarnation.engine, upload)
    incarnation.links.destroy()
    await incarnation.engine.close()
  }

  /** Ingests an upload and counts it; resolves once its batch committed or the log refused it (then `#error` says why). */
  #ingest(engine: Engine, upload: readonly StreamEvent[]): Promise<void> {
    const receipt = engine.ingest(upload)
    const counters = this.#counters
    counters.accepted += receipt.accepted
    counters.duplicates += receipt.duplicates
    counters.rejected += receipt.rejected
    if (!this.#online) counters.offlineReadings += receipt.accepted
    return receipt.durable.then(
      () => {
        counters.durable += receipt.accepted
      },
      (error: unknown) => {
        this.#error = `write-ahead log refused a batch: ${error instanceof Error ? error.message : String(error)}`
      },
    )
  }

  async #openIncarnation(): Promise<void> {
    const { wiring, epoch, settings, now } = this.#options
    const doc = new Y.Doc()
    // Created first, with the fleet's clock: the link and the binding find it by doc.
    syncStatusTracker(doc, { now })
    const claim = { held: true }
    const persistence = indexedDbPersistence({
      name: deviceDatabaseName(wiring, epoch, this.id),
      claim,
      ...(wiring.indexedDB === undefined ? {} : { indexedDB: wiring.indexedDB }),
    })
    let engine: Engine
    try {
      engine = await openEngine({ ...fleetEngineOptions(settings, now), persistence })
      bindDoc(engine, doc, {
        onError: (error) => {
          this.#error = `replication: ${error.message}`
        },
      })
    } catch (error) {
      this.#phase = 'failed'
      this.#error = `could not open the write-ahead log: ${error instanceof Error ? error.message : String(error)}`
      return
    }
    if (this.#phase === 'closed') {
      await engine.close()
      return
    }
    const links = new DocLinks(doc, wiring, { epoch, device: this.id, replica: engine.replica.replicaId }, this.#online)
    this.#incarnation = { doc, engine, persistence, claim, links }
    // The log knows the last seq this device ingested; readings that died unsampled left no gap.
    const clock = engine.replica.exportState().clocks.find((entry) => entry.source === this.id)
    const lastSeq = clock?.prefix ?? 0
    this.#producer = new ReadingProducer(this.profile, this.#options.faults, this.#options.rng, now(), lastSeq)
    const report = recoveryReport(engine)
    if (report !== undefined) {
      this.#recovery = {
        at: now(),
        checkpointLsn: report.checkpointLsn,
        replayedRecords: report.replayedRecords,
        replayedEvents: report.replayedEvents,
        lostEvents: report.lostEvents,
        lossUnknown: report.lossUnknown,
        durationMs: Math.round(report.durationMs),
        recoveredReadings: engine.stats().applied,
        resumedAfterSeq: lastSeq,
      }
    }
    this.#phase = 'running'
  }
}

/** Readings refused because another replica writes this device's source in the same room. */
function conflictOf(refused: number, id: string): string | null {
  return refused === 0 ? null : `source_conflict: another replica writes ${id} in this room; ${refused} readings refused`
}
