import type { EngineStats, LateEvent, SyncStatus, WindowChange } from '@tidemark/engine'
import { sameAddress, type WindowAddress } from '../common/windowAddress.ts'
import type { FrameMessage } from '../protocol/messages.ts'
import { WindowMirror } from './windowMirror.ts'

const EMPTY_LANE: readonly LateEvent[] = Object.freeze([])
const LOCAL: SyncStatus = Object.freeze({ state: 'local', lastSync: null, pendingLocalUpdates: 0, peers: 0, refusal: null })

/** What applying one frame did: the changes for the page's feed, and the watched windows the host may forget. */
export interface FrameOutcome {
  readonly changes: WindowChange[]
  readonly unwatched: WindowAddress[]
}

/**
 * What a page shows of its host's engine, as the frames left it: the live windows and the
 * histories it watches (`windows`), the watermark, the stats, the sync status and the late lane.
 *
 * @example
 * const state = new MirroredState()
 * const { changes } = state.apply(frame, false)
 * state.watermark // the frame's
 */
export class MirroredState {
  readonly windows = new WindowMirror()
  watermark = Number.NEGATIVE_INFINITY
  stats: EngineStats | null = null
  #sync: SyncStatus | null = null
  #lane: readonly LateEvent[] = EMPTY_LANE

  get lateLane(): readonly LateEvent[] {
    return this.#lane
  }

  /** The host's sync status; `local` before its first frame. */
  get sync(): SyncStatus {
    return this.#sync ?? LOCAL
  }

  /**
   * Applies `frame` (its rows checked already). A host's first frame (`welcome`) and a frame
   * marked `replace` replace what the page holds; others change it. `unwatched` lists, except
   * after a welcome (the new host was never asked for them), the watched windows the frame ended.
   */
  apply(frame: FrameMessage, welcome: boolean): FrameOutcome {
    const changes: WindowChange[] = []
    const unwatched: WindowAddress[] = []
    const windows = this.windows
    const resets =
      welcome || frame.replace === true
        ? windows.replace(frame.rows, changes, unwatched, frame.watermark, welcome)
        : windows.apply(frame.rows, changes, unwatched)
    if (welcome) unwatched.length = 0
    if (resets.length > 0) this.#touchHistories(resets, changes)
    this.watermark = frame.watermark
    if (frame.stats !== undefined) this.stats = frame.stats
    if (frame.sync !== undefined) this.#sync = frame.sync
    if (frame.late !== undefined) {
      const { entries, replace: whole } = frame.late
      const lane = whole ? [...entries] : [...this.#lane, ...entries]
      const keep = this.stats?.lateLane ?? lane.length
      this.#lane = Object.freeze(lane.length > keep ? lane.slice(lane.length - keep) : lane)
    }
    unwatched.push(...windows.expire(frame.watermark))
    return { changes, unwatched }
  }

  /**
   * A history that arrived for a window no change row touched still needs a change, so views
   * re-read it: the window's latest result again (a cumulating window's end tells it apart).
   */
  #touchHistories(addresses: readonly WindowAddress[], changes: WindowChange[]): void {
    for (const address of addresses) {
      if (changes.some(({ result }) => sameAddress(result, address))) continue
      const result = this.windows.get(address)
      if (result === undefined) continue
      changes.push({ type: result.status === 'provisional' ? 'provisional' : result.status === 'on_time' ? 'on_time' : 'correction', result, pane: result.pane })
    }
  }
}
