import type { EngineStats, LateEvent, SyncStatus, WindowChangeType, WindowResult } from '@tidemark/engine'
import { AddressMap, type WindowAddress } from '../common/addressMap.ts'
import type { FrameMessage, HostMessage, LateNews } from '../protocol/messages.ts'
import { rowBuffers, WindowRowWriter } from '../protocol/windowRows.ts'
import type { TouchedWindow } from './changeCompactor.ts'

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
 * One connected page: what it has not been sent yet, and how far it acknowledged. A page
 * that stops reading (a frozen or busy tab) is sent nothing more after two unacknowledged
 * frames; its changes wait as one row per window (so at most the live windows), and go in one
 * frame when it acknowledges again. The port never fills up.
 */
export class HostClient {
  readonly tab: string
  readonly link: ClientLink
  /** Events sent by this page and not yet durable. */
  inFlight = 0
  #frame = 0
  #unacked = 0
  readonly #backlog = new AddressMap<{ type: WindowChangeType; result: WindowResult }>()
  readonly #watches = new AddressMap<true>()
  /** Windows whose whole history goes in the next frame. */
  readonly #historyResets = new AddressMap<true>()
  /** Fired results of watched windows not sent yet, per window, oldest first. */
  readonly #historyNews = new AddressMap<WindowResult[]>()
  #sent: HostState | null = null

  constructor(tab: string, link: ClientLink) {
    this.tab = tab
    this.link = link
  }

  /** Takes in what a tick changed. */
  absorb(touched: readonly TouchedWindow[]): void {
    for (const entry of touched) {
      this.#backlog.set(entry.address, { type: entry.type, result: entry.result })
      if (entry.fired.length === 0 || !this.#watches.has(entry.address) || this.#historyResets.has(entry.address)) continue
      const news = this.#historyNews.get(entry.address)
      if (news === undefined) this.#historyNews.set(entry.address, [...entry.fired])
      else news.push(...entry.fired)
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
    this.#backlog.forEach(({ type, result }) => {
      writer.add(type, result)
    })
    this.#backlog.clear()
    this.#historyResets.forEach((_, address) => {
      writer.add('history-reset', { ...address, end: 0, count: 0, sum: 0, min: 0, max: 0, mean: 0, status: 'provisional', revision: 0, final: false, basis: 'unknown' })
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
