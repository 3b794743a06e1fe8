import type { Engine, StreamEvent, SyncStatus } from '@tidemark/engine'
import { recoveryReport } from '@tidemark/idb'
import { bindDoc, type DocBinding, syncStatusTracker } from '@tidemark/yjs'
import * as Y from 'yjs'
import { DocLinks } from './docLinks.ts'
import { nextDeviceSource } from './deviceSource.ts'
import { type DeviceStatus, RETIRE_ACK_MS, type RecoveryNote, type RetireReply, sameStatus } from './deviceStatus.ts'
import type { FleetSettings } from './fleetSettings.ts'
import type { FleetWiring, LinkTransports } from './fleetWiring.ts'
import type { HostPlatform } from './hostPlatform.ts'
import { createDeviceProfile, type DeviceProfile, type ProducerFaults, ReadingProducer } from './readingProducer.ts'

export interface DeviceNodeOptions {
  /** Fleet slot index (`d01` is 0). */
  readonly index: number
  readonly settings: FleetSettings
  readonly wiring: FleetWiring
  readonly transports: LinkTransports
  readonly epoch: string
  readonly faults: ProducerFaults
  /** The host's clock, timers and random numbers: processing time of the producer and the sync status, the bound of a retire's wait for the relay, the relay client's reconnects. */
  readonly platform: Pick<HostPlatform, 'now' | 'every' | 'timers' | 'random'>
}

/** The switches a page boots a device with: its link up or down, its producer paused or not. */
export interface DeviceSwitches {
  readonly online: boolean
  readonly paused: boolean
}

/** How often the producer samples and uploads when due, ms. */
const STEP_MS = 100

/**
 * One simulated device, inside its host worker: a reading producer, and the host's engine (over
 * the device's IndexedDB write-ahead log) bound to the device's own `Y.Doc`. It ingests every
 * upload into that engine (log before apply); the engine writes the lattice cells into the doc,
 * and the doc's link (its room on the relay, with a token for that room, its replica and its
 * source; or its tab channel when there is no relay) carries them to the dashboards. Nothing
 * else leaves the device.
 *
 * The producer runs here, in the host, and nowhere else: however many pages open the device,
 * each reading is sampled and ingested once. It starts on `boot` (the first page's switches; a
 * host that restarted after a crash gets them again from the pages that reconnect).
 *
 * `crash()` stops the timer and drops the links without flushing anything, and the host then
 * ends its worker (`HostPlatform.terminate`): no `close()`, no last checkpoint. The pages start
 * the host again, `openEngine` recovers the log (checkpoint + tail), and the device continues
 * after the seq the log holds. Readings sampled but not yet ingested, and those ingested but
 * not yet durable, die with it: never acknowledged, and never sent to the relay (the engine
 * hands its writes to the document only once durable), so their seqs are free to be used again.
 *
 * @example
 * const node = new DeviceNode(engine, { index: 6, settings, wiring, transports: {}, epoch, faults: DEFAULT_FAULTS, platform })
 * node.boot({ online: true, paused: false }) // links up, sampling every 100 ms
 * node.setOnline(false)                       // its link down, the log keeps growing
 * node.crash()                                // then the host ends its worker
 */
export class DeviceNode {
  readonly profile: DeviceProfile
  /** The source this run of the device writes: its id, or a later source once an earlier one finished (`nextDeviceSource`). */
  readonly source: string
  readonly #options: DeviceNodeOptions
  readonly #engine: Engine
  readonly #doc: Y.Doc
  readonly #binding: DocBinding
  readonly #producer: ReadingProducer
  readonly #recovery: RecoveryNote | null
  #links: DocLinks | null = null
  #stopSteps: (() => void) | null = null
  #phase: DeviceStatus['phase'] = 'booting'
  #online = true
  #paused = false
  #offlineSince: number | null = null
  #error: string | null = null
  #counters = { accepted: 0, duplicates: 0, rejected: 0, durable: 0, offlineReadings: 0 }
  #status: DeviceStatus | null = null

  /** Binds the host's freshly opened engine to the device's document; nothing runs until `boot`. */
  constructor(engine: Engine, options: DeviceNodeOptions) {
    this.#options = options
    this.#engine = engine
    const now = options.platform.now
    const { profile, rng } = createDeviceProfile(options.index, options.settings.seed, now())
    this.profile = profile
    this.#doc = new Y.Doc()
    // Created first, with the host's clock: the link and the binding find it by doc.
    syncStatusTracker(this.#doc, { now })
    this.#binding = bindDoc(engine, this.#doc, {
      onError: (error) => {
        this.#error = `replication: ${error.message}`
      },
    })
    // The log knows the last seq this device ingested; readings that died unlogged left no gap.
    // A source it finished when it left the fleet takes nothing more: this run writes the next one.
    const { source, lastSeq } = nextDeviceSource(engine.replica.exportState().clocks, profile.id)
    this.source = source
    this.#producer = new ReadingProducer(profile, options.faults, rng, now(), lastSeq, source)
    const report = recoveryReport(engine)
    this.#recovery =
      report === undefined
        ? null
        : {
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

  get id(): string {
    return this.profile.id
  }

  /**
   * Starts the device with a page's switches: its links (unless offline) and its producer. Only
   * the first boot of a host counts; later ones (other pages) leave it as it is.
   */
  boot(switches: DeviceSwitches): DeviceStatus {
    if (this.#phase !== 'booting') return this.status()
    const { now, every } = this.#options.platform
    this.#online = switches.online
    this.#paused = switches.paused
    if (!switches.online) this.#offlineSince = now()
    const { wiring, transports, epoch } = this.#options
    this.#links = new DocLinks(this.#doc, wiring, transports, { epoch, device: this.id, replica: this.#engine.replica.replicaId }, this.#options.platform, switches.online)
    // The time between opening and booting is not sampled after the fact.
    this.#producer.resume(now())
    this.#stopSteps = every(STEP_MS, () => this.#step(now()))
    this.#phase = 'running'
    return this.status()
  }

  /** Connects or disconnects the device's links; its engine keeps ingesting either way. */
  setOnline(online: boolean): void {
    if (online === this.#online) return
    this.#online = online
    if (online) {
      this.#offlineSince = null
      this.#counters.offlineReadings = 0
    } else {
      this.#offlineSince = this.#options.platform.now()
    }
    this.#links?.setOnline(online)
  }

  /** Stops or restarts sampling; back from a pause, there is no catch-up burst for the time paused. */
  setPaused(paused: boolean): void {
    if (paused === this.#paused) return
    this.#paused = paused
    if (!paused) this.#producer.resume(this.#options.platform.now())
  }

  /**
   * Drops everything as a dying worker does: the timer stops, the links are cut without a last
   * upload. Returns the readings that die with it (sampled and not ingested, or ingested and not
   * yet durable: never acknowledged).
   */
  crash(): number {
    const lost = this.#producer.buffered + this.#counters.accepted - this.#counters.durable
    this.halt()
    return lost
  }

  /** Stops the timer and cuts the links, nothing flushed (a crash, or the host stopping). */
  halt(): void {
    this.#stopSteps?.()
    this.#stopSteps = null
    this.#links?.destroy()
    this.#links = null
    this.#phase = 'retired'
  }

  /**
   * A clean stop, for good in this host: the producer uploads what it sampled (up to now unless
   * paused) and waits for that batch to commit; with `finish` (the device leaves the fleet) the
   * engine finishes the device's source and waits for that to be durable, so no replica that
   * gets its clock waits for it any more. Then, while its link is up, it waits for the relay to
   * acknowledge every update of the document (at most `RETIRE_ACK_MS`), and the links close and
   * the document is unbound. The host closes the engine after it (a last checkpoint), so whoever
   * opens the log next finds every reading and continues after them (in the next source, when
   * this one finished).
   */
  async retire(finish = false): Promise<RetireReply> {
    if (this.#phase === 'retired') return { finished: false, relay: null }
    const running = this.#phase === 'running'
    this.#stopSteps?.()
    this.#stopSteps = null
    this.#phase = 'retired'
    const upload = running ? this.#producer.flush(this.#options.platform.now(), this.#paused) : null
    // Links still up: once durable, its cells go to the relay from here too.
    if (upload !== null) await this.#ingest(upload)
    let finished = false
    if (finish) {
      try {
        // Durable in the log, and (written to the document once durable) handed to the links.
        await this.#engine.finishSource(this.source)
        finished = true
      } catch (error) {
        this.#error = `finishing ${this.source} failed: ${error instanceof Error ? error.message : String(error)}`
      }
    }
    const relay = await this.#acknowledged()
    this.#links?.destroy()
    this.#links = null
    this.#binding.destroy()
    return { finished, relay }
  }

  /** Waits (at most `RETIRE_ACK_MS`) for the relay to acknowledge every update of the document, unless its link is down or refused. */
  #acknowledged(): Promise<RetireReply['relay']> {
    if (this.#options.wiring.relay === null) return Promise.resolve(null)
    if (!this.#online || this.#links === null) return Promise.resolve('offline')
    const tracker = syncStatusTracker(this.#doc)
    const { timers } = this.#options.platform
    const answered = (status: SyncStatus): RetireReply['relay'] | null =>
      status.refusal !== null ? 'unacknowledged' : status.state === 'connected' && status.pendingLocalUpdates === 0 ? 'acknowledged' : null
    const now = answered(tracker.status())
    if (now !== null) return Promise.resolve(now)
    return new Promise((resolve) => {
      const done = (relay: RetireReply['relay']): void => {
        stop()
        timers.clearTimeout(timer)
        resolve(relay)
      }
      const stop = tracker.subscribe((status) => {
        const relay = answered(status)
        if (relay !== null) done(relay)
      })
      const timer = timers.setTimeout(() => done('unacknowledged'), RETIRE_ACK_MS)
    })
  }

  /** The device as the tables show it; the same object while nothing in it changed. */
  status(): DeviceStatus {
    const engine = this.#engine
    const stats = engine.stats()
    const sync = engine.syncStatus()
    const relay = this.#links?.relayLink() ?? null
    const hasRelay = this.#options.wiring.relay !== null
    const next: DeviceStatus = {
      id: this.id,
      source: this.source,
      epoch: this.#options.epoch,
      phase: this.#phase,
      online: this.#online,
      offlineSince: this.#offlineSince,
      paused: this.#paused,
      syncState: sync.state,
      pending: sync.pendingLocalUpdates,
      lastSync: sync.lastSync,
      relayState: hasRelay ? (relay?.state ?? 'offline') : null,
      relayRefusal: relay?.refusal ?? null,
      skewMs: this.profile.skewMs,
      seq: this.#producer.seq,
      ...this.#counters,
      walRecords: stats.walRecords,
      walBytes: stats.walBytes,
      docBytes: stats.docBytes,
      recovery: this.#recovery,
      error: this.#error ?? stats.persistenceError ?? stats.replicationError ?? this.#links?.relayError() ?? conflictOf(stats.anomalies.source_conflict, this.id),
    }
    if (this.#status !== null && sameStatus(this.#status, next)) return this.#status
    this.#status = next
    return next
  }

  /** Samples, and ingests an upload when one is due. */
  #step(now: number): void {
    if (this.#phase !== 'running' || this.#paused) return
    const upload = this.#producer.poll(now)
    if (upload !== null) void this.#ingest(upload)
  }

  /** Ingests an upload and counts it; resolves once its batch committed or the log refused it (then `#error` says why). */
  #ingest(upload: readonly StreamEvent[]): Promise<void> {
    const counters = this.#counters
    let receipt: ReturnType<Engine['ingest']>
    try {
      receipt = this.#engine.ingest(upload)
    } catch (error) {
      this.#error = `ingest failed: ${error instanceof Error ? error.message : String(error)}`
      return Promise.resolve()
    }
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
}

/** Readings refused because another replica writes this device's source in the same room. */
function conflictOf(refused: number, id: string): string | null {
  return refused === 0 ? null : `source_conflict: another replica writes ${id} in this room; ${refused} readings refused`
}
