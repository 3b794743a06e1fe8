import { type Engine, type EngineStats, type LateEvent, type PaneInfo, shallowEqual, type SyncStatus, type WindowResult } from '@tidemark/engine'
import { AddressMap } from '../common/addressMap.ts'
import type { WindowAddress } from '../common/windowAddress.ts'
import { type FrameMessage, type HostMessage, type LateNews, wireError } from '../protocol/messages.ts'
import { rowBuffers, uncloneableAggregate, WindowRowWriter } from '../protocol/windowRows.ts'
import type { ChangeRow } from './changeCompactor.ts'

/**
 * How the host reaches one page: a MessagePort (SharedWorker, or the leader tab's own worker),
 * or the tab channel (a follower tab in leader mode, where nothing can be transferred).
 */
export interface ClientLink {
  send(message: HostMessage, transfer: Transferable[]): void
}

/** The engine's state at one tick, shared by every client. */
export interface HostState {
  readonly watermark: number
  readonly stats: EngineStats
  readonly sync: SyncStatus
  /** Late-lane entries ever put on the lane, and the lane now. */
  readonly latePosition: number
  readonly lateLane: readonly LateEvent[]
}

/**
 * The engine's state now, for every client's next frame; what did not change keeps the identity
 * it had in `last`, so a frame tells changed scalars by identity.
 *
 * @example
 * state = readHostState(engine, state)
 */
export function readHostState(engine: Engine, last: HostState | null): HostState {
  let stats = engine.stats()
  if (last !== null && shallowEqual(last.stats, stats, (x, y) => shallowEqual(x, y))) stats = last.stats
  let sync: SyncStatus = engine.syncStatus()
  if (last !== null && shallowEqual(last.sync, sync)) sync = last.sync
  return { watermark: engine.watermark(), stats, sync, latePosition: stats.lateLane + stats.lateLaneTrimmed, lateLane: engine.lateEvents() }
}

/** Frames a page may have unacknowledged; past that its changes wait here, compacted. */
const MAX_UNACKED = 2

/**
 * Discarding mode: changes a lagging page's backlog keeps. Past that, it keeps only each
 * window's last change (what `results()` shows); the page then misses the panes in between.
 * Either mode: rows a backlog keeps beyond the engine's live windows. Past that (a page frozen
 * while windows opened, went final and expired), the backlog is dropped and the page is sent
 * the whole live state instead, which replaces its own when it reads again.
 */
export const MAX_BACKLOG_PANES = 20_000

/** What a client reads from the engine when a frame needs it. */
export interface HostView {
  /** A watched window's whole history. */
  history(address: WindowAddress): readonly WindowResult[]
  /** The live windows, in the engine's order. */
  results(): readonly WindowResult[]
}

/** The pane of a `history-reset` row, which carries only an address. */
const NO_PANE: PaneInfo = Object.freeze({ timing: 'early', index: 0, onTimeIndex: -1 })

/**
 * One connected page: what it has not been sent yet, and how far it acknowledged. A page
 * that stops reading (a frozen or busy tab) is sent nothing more after two unacknowledged
 * frames; its changes wait as one row per window changed meanwhile (windows that left live
 * state included: the page still shows them) or, in discarding mode, every change up to
 * `MAX_BACKLOG_PANES` of them, then one per window, and go in one frame when it acknowledges
 * again. A backlog that outgrows the live windows by `MAX_BACKLOG_PANES` is dropped: the page
 * is then sent the whole live state, which replaces its own. The port never fills up, and
 * neither does the host.
 */
export class HostClient {
  readonly tab: string
  readonly link: ClientLink
  /** Events sent by this page and not yet durable. */
  inFlight = 0
  #frame = 0
  #unacked = 0
  /** Accumulating mode: each window's last change not sent yet. */
  readonly #latest = new AddressMap<ChangeRow>()
  /** Discarding mode: the changes not sent yet, in the engine's order. */
  #panes: ChangeRow[] = []
  /** `#panes` is cut down to each window's last change past this length. */
  #panesBound = MAX_BACKLOG_PANES
  readonly #keepsPanes: boolean
  readonly #watches = new AddressMap<true>()
  /** Watched windows whose whole history goes in the next frame. */
  readonly #historyResets = new AddressMap<true>()
  /** The backlog outgrew the live windows and was dropped: the next frame carries the whole state. */
  #resync = false
  #sent: HostState | null = null
  /** The source the page's hello claimed, until the page is told that the engine holds a finish of it. */
  #claim: string | null
  /** A frame for this page could not be sent (the structured clone refused it): the page was told why, and is sent nothing more. */
  #refused = false

  /** `keepsPanes`: the engine's panes are increments (discarding mode), each one sent; `claim`: the source the page's tab claimed, if its welcome did not say it is finished. */
  constructor(tab: string, link: ClientLink, keepsPanes: boolean, claim: string | null = null) {
    this.tab = tab
    this.link = link
    this.#keepsPanes = keepsPanes
    this.#claim = claim
  }

  /**
   * Tells the page, once, that the engine holds a finish of the source its tab claimed: a finish
   * that reached the host after the welcome, merged from a peer (a log lost with the site's
   * storage, its state back from the relay). The page finishes the source again, which resolves
   * once that finish is durable, and retires its claim.
   */
  tellFinished(engine: Engine): void {
    if (this.#claim === null || !engine.isFinished(this.#claim)) return
    this.#claim = null
    this.link.send({ t: 'finished' }, [])
  }

  /**
   * The page asked the engine to finish `source` itself, and the engine holds that finish: when
   * it is the page's claim, the page retires the claim once its own finish resolves, and is not
   * told (it would finish the source again, and retire the claim twice).
   */
  finishing(source: string, engine: Engine): void {
    if (source === this.#claim && engine.isFinished(source)) this.#claim = null
  }

  /**
   * Takes in what a tick changed. A watched window that changed gets its whole history again:
   * the engine's history of a window is not only what it fired since (it keeps the last 64, and a
   * session whose start moved keeps what it fired under its old start), and a page watches few windows.
   */
  absorb(rows: readonly ChangeRow[], openWindows: number): void {
    const resync = this.#resync
    for (const row of rows) {
      if (this.#watches.has(row.address)) this.#historyResets.set(row.address, true)
      if (resync) continue
      if (this.#keepsPanes) this.#panes.push(row)
      else this.#latest.set(row.address, row)
    }
    if (resync) return
    if (this.#panes.length > this.#panesBound) {
      this.#panes = lastPerWindow(this.#panes)
      this.#panesBound = Math.max(MAX_BACKLOG_PANES, 2 * this.#panes.length)
    }
    // Only while the page cannot take a frame: one tick that touched many windows (a backfill) goes out whole.
    if (this.#unacked >= MAX_UNACKED && this.backlog > openWindows + MAX_BACKLOG_PANES) {
      this.#clearBacklog()
      this.#resync = true
    }
  }

  /**
   * The backlog was dropped: the next frame carries the whole state, read from the engine as a
   * tick takes its changes (read between ticks, it would hold changes the next tick sends again).
   */
  get resyncing(): boolean {
    return this.#resync
  }

  /** Rows waiting for this page. */
  get backlog(): number {
    return this.#keepsPanes ? this.#panes.length : this.#latest.size
  }

  /** The page wants the history of `address`: all of it in the next frame, and again in each frame that changed the window. */
  watch(address: WindowAddress): void {
    this.#watches.set(address, true)
    this.#historyResets.set(address, true)
  }

  unwatch(address: WindowAddress): void {
    this.#watches.delete(address)
    this.#historyResets.delete(address)
  }

  /** The first frame: the whole state (`results`, every late-lane entry), sent with the welcome. */
  snapshot(state: HostState, results: readonly WindowResult[]): FrameMessage {
    return this.#whole(state, results, null)
  }

  /**
   * A frame of the whole state: every live window and late-lane entry, then (with `view`) the
   * histories due; the backlog is dropped. The page replaces its state with it.
   */
  #whole(state: HostState, results: readonly WindowResult[], view: HostView | null): FrameMessage {
    const writer = new WindowRowWriter()
    for (const result of results) writer.add(result.status === 'provisional' ? 'provisional' : result.status === 'on_time' ? 'on_time' : 'correction', result)
    if (view !== null) this.#histories(writer, view)
    this.#clearBacklog()
    this.#resync = false
    this.#sent = state
    this.#unacked++
    return {
      t: 'frame',
      frame: ++this.#frame,
      rows: writer.take(),
      watermark: state.watermark,
      stats: state.stats,
      sync: state.sync,
      late: { position: state.latePosition, entries: state.lateLane, replace: true },
    }
  }

  /** The page applied frame `frame`. */
  ack(frame: number): void {
    if (frame > this.#frame) return
    this.#unacked = Math.max(0, this.#unacked - 1)
  }

  /**
   * Sends what changed since the last frame, if the page has room for a frame and anything
   * changed: or, once its backlog was dropped, the whole state, marked to replace the page's.
   */
  flush(state: HostState, view: HostView): void {
    const sent = this.#sent
    if (sent === null || this.#unacked >= MAX_UNACKED || this.#refused) return
    if (this.#resync) {
      // The watched windows that changed meanwhile are among the history resets: `absorb` kept them.
      const frame: FrameMessage = { ...this.#whole(state, view.results(), view), replace: true }
      this.sendFrame(frame, frame)
      return
    }
    const writer = new WindowRowWriter()
    this.#latest.forEach(({ type, result, previous }) => {
      writer.add(type, result, previous)
    })
    for (const { type, result, previous } of this.#panes) writer.add(type, result, previous)
    this.#clearBacklog()
    this.#histories(writer, view)
    const late = this.#lateNews(sent, state)
    const changed = writer.size > 0 || !Object.is(sent.watermark, state.watermark) || sent.stats !== state.stats || sent.sync !== state.sync || late !== null
    if (!changed) return
    const rows = writer.take()
    const frame: FrameMessage = {
      t: 'frame',
      frame: ++this.#frame,
      rows,
      watermark: state.watermark,
      ...(sent.stats === state.stats ? {} : { stats: state.stats }),
      ...(sent.sync === state.sync ? {} : { sync: state.sync }),
      ...(late === null ? {} : { late }),
    }
    this.#sent = state
    this.#unacked++
    this.sendFrame(frame, frame)
  }

  /**
   * Sends `message` (a frame, or the welcome carrying `frame`); returns false when the structured
   * clone refused it (a user aggregate's result holding a function, a Symbol): the page is then
   * told why (it fails with that reason) and sent nothing more, and the other pages go on.
   */
  sendFrame(message: HostMessage, frame: FrameMessage): boolean {
    if (this.#refused) return false
    try {
      this.link.send(message, rowBuffers(frame.rows))
      return true
    } catch (error) {
      this.#refused = true
      // The aggregate and window at fault, so the app knows which aggregate to fix (cloned one by one, only now).
      const detail = uncloneableAggregate(frame.rows) ?? (error instanceof Error ? `${error.name}: ${error.message}` : String(error))
      const reason = `the host cannot send this page the engine's windows (${detail}): a user aggregate's result must be structured-cloneable`
      try {
        this.link.send({ t: 'refused', reason, error: wireError(error) }, [])
      } catch {
        // The link itself is gone: nothing to tell.
      }
      return false
    }
  }

  /** The whole history of each window whose history is due, each after a `history-reset` row. */
  #histories(writer: WindowRowWriter, view: HostView): void {
    this.#historyResets.forEach((_, address) => {
      const { window, key, start } = address
      writer.add('history-reset', {
        window, key, start, end: address.end ?? 0, count: 0, sum: 0, min: 0, max: 0, mean: 0,
        status: 'provisional', revision: 0, final: false, basis: 'unknown', pane: NO_PANE,
      })
      for (const result of view.history(address)) writer.add('history', result)
    })
    this.#historyResets.clear()
  }

  #clearBacklog(): void {
    this.#latest.clear()
    this.#panes = []
    this.#panesBound = MAX_BACKLOG_PANES
  }

  #lateNews(sent: HostState, state: HostState): LateNews | null {
    const added = state.latePosition - sent.latePosition
    if (added === 0 && sent.lateLane === state.lateLane) return null
    const lane = state.lateLane
    if (added <= 0 || added > lane.length) return { position: state.latePosition, entries: lane, replace: true }
    return { position: state.latePosition, entries: lane.slice(lane.length - added), replace: false }
  }
}

/** Each window's last row of `rows`, in the order of those rows. */
function lastPerWindow(rows: readonly ChangeRow[]): ChangeRow[] {
  const seen = new AddressMap<true>()
  const kept: ChangeRow[] = []
  for (let i = rows.length - 1; i >= 0; i--) {
    const row = rows[i] as ChangeRow
    if (seen.has(row.address)) continue
    seen.set(row.address, true)
    kept.push(row)
  }
  return kept.reverse()
}
