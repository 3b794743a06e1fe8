import type { EngineStats, LateEvent, PaneInfo, SyncStatus, WindowResult } from '@tidemark/engine'
import { AddressMap } from '../common/addressMap.ts'
import type { WindowAddress } from '../common/windowAddress.ts'
import type { FrameMessage, HostMessage, LateNews } from '../protocol/messages.ts'
import { rowBuffers, WindowRowWriter } from '../protocol/windowRows.ts'
import type { ChangeRow, TouchedWindow } from './changeCompactor.ts'

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

/** Frames a page may have unacknowledged; past that its changes wait here, compacted. */
const MAX_UNACKED = 2

/**
 * Discarding mode: panes a lagging page's backlog keeps beyond each window's last one. Past
 * that, each window keeps only its last pane (what `results()` shows), so the backlog stays
 * bounded by the live windows.
 */
export const MAX_BACKLOG_PANES = 20_000

/** The pane of a `history-reset` row, which carries only an address. */
const NO_PANE: PaneInfo = Object.freeze({ timing: 'early', index: 0, onTimeIndex: -1 })

/**
 * One connected page: what it has not been sent yet, and how far it acknowledged. A page
 * that stops reading (a frozen or busy tab) is sent nothing more after two unacknowledged
 * frames; its changes wait as one row per window (so at most the live windows) or, in
 * discarding mode, as every pane of each window up to `MAX_BACKLOG_PANES` more, and go in one
 * frame when it acknowledges again. The port never fills up.
 */
export class HostClient {
  readonly tab: string
  readonly link: ClientLink
  /** Events sent by this page and not yet durable. */
  inFlight = 0
  #frame = 0
  #unacked = 0
  /** Changes not sent yet, per window, oldest first. */
  readonly #backlog = new AddressMap<ChangeRow[]>()
  /** Rows in `#backlog` beyond one per window. */
  #extraRows = 0
  readonly #watches = new AddressMap<true>()
  /** Windows whose whole history goes in the next frame. */
  readonly #historyResets = new AddressMap<true>()
  /** Fired results of watched windows not sent yet, per window, oldest first. */
  readonly #historyNews = new AddressMap<WindowResult[]>()
  #sent: HostState | null = null

  readonly #keepsPanes: boolean

  /** `keepsPanes`: the engine's panes are increments (discarding mode), each one sent. */
  constructor(tab: string, link: ClientLink, keepsPanes: boolean) {
    this.tab = tab
    this.link = link
    this.#keepsPanes = keepsPanes
  }

  /** Takes in what a tick changed. */
  absorb(touched: readonly TouchedWindow[]): void {
    for (const entry of touched) {
      this.#backlogRows(entry)
      if (entry.fired.length === 0 || !this.#watches.has(entry.address) || this.#historyResets.has(entry.address)) continue
      const news = this.#historyNews.get(entry.address)
      if (news === undefined) this.#historyNews.set(entry.address, [...entry.fired])
      else news.push(...entry.fired)
    }
    if (this.#extraRows > MAX_BACKLOG_PANES) {
      this.#backlog.forEach((rows) => {
        rows.splice(0, rows.length - 1)
      })
      this.#extraRows = 0
    }
  }

  /** Queues the rows of `entry`: after the window's waiting ones when they are panes to add up, else in their place. */
  #backlogRows(entry: TouchedWindow): void {
    const waiting = this.#backlog.get(entry.address)
    const { rows } = entry
    if (waiting === undefined) {
      this.#backlog.set(entry.address, rows.slice())
      this.#extraRows += rows.length - 1
    } else if (!this.#keepsPanes) waiting.splice(0, waiting.length, ...rows)
    else {
      waiting.push(...rows)
      this.#extraRows += rows.length
    }
  }

  /** The page wants the history of `address`: all of it in the next frame, then each fired result. */
  watch(address: WindowAddress): void {
    this.#watches.set(address, true)
    this.#historyResets.set(address, true)
    this.#historyNews.delete(address)
  }

  unwatch(address: WindowAddress): void {
    this.#watches.delete(address)
    this.#historyResets.delete(address)
    this.#historyNews.delete(address)
  }

  /** The first frame: the whole state (`results`, every late-lane entry), sent with the welcome. */
  snapshot(state: HostState, results: readonly WindowResult[]): FrameMessage {
    const writer = new WindowRowWriter()
    for (const result of results) writer.add(result.status === 'provisional' ? 'provisional' : result.status === 'on_time' ? 'on_time' : 'correction', result)
    this.#backlog.clear()
    this.#extraRows = 0
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
   * changed. `history` reads a watched window's whole history from the engine.
   */
  flush(state: HostState, history: (address: WindowAddress) => readonly WindowResult[]): void {
    const sent = this.#sent
    if (sent === null || this.#unacked >= MAX_UNACKED) return
    const writer = new WindowRowWriter()
    this.#backlog.forEach((rows) => {
      for (const { type, result, previous } of rows) writer.add(type, result, previous)
    })
    this.#backlog.clear()
    this.#extraRows = 0
    this.#historyResets.forEach((_, address) => {
      const { window, key, start } = address
      writer.add('history-reset', {
        window, key, start, end: address.end ?? 0, count: 0, sum: 0, min: 0, max: 0, mean: 0,
        status: 'provisional', revision: 0, final: false, basis: 'unknown', pane: NO_PANE,
      })
      for (const result of history(address)) writer.add('history', result)
    })
    this.#historyResets.clear()
    this.#historyNews.forEach((news) => {
      for (const result of news) writer.add('history', result)
    })
    this.#historyNews.clear()
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
    this.link.send(frame, rowBuffers(rows))
  }

  #lateNews(sent: HostState, state: HostState): LateNews | null {
    const added = state.latePosition - sent.latePosition
    if (added === 0 && sent.lateLane === state.lateLane) return null
    const lane = state.lateLane
    if (added <= 0 || added > lane.length) return { position: state.latePosition, entries: lane, replace: true }
    return { position: state.latePosition, entries: lane.slice(lane.length - added), replace: false }
  }
}
