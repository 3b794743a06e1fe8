/**
 * Long runs at steady load, for bounded memory. The case is a handful of parameters; the
 * traffic is generated round by round as it is ingested (never materialized), so a run can
 * be hundreds of thousands of events. No reference model (it would be quadratic); instead:
 *
 * - every receipt balances, the watermark never goes back, the late lane is a bounded ring
 *   that counts what it trims;
 * - `openWindows`, `cells`, `dedupEntries` and `pending` stay under bounds derived from the
 *   configuration alone (see `memoryBounds`), however long the run;
 * - conservation (single tumbling or session spec; a sliding or cumulating spec counts each
 *   event at most once per window holding it): the values a consumer folded from the
 *   change stream add up to exactly the events the receipts accepted, never more than
 *   distinct events were sent, although old events are replayed across many windows, also
 *   after dedup memory for them was released;
 * - after a forced watermark past everything, live state empties and a fresh event is accepted.
 */
import {
  boundedOutOfOrderness,
  createEngine,
  type EngineLimits,
  type EngineStats,
  type StreamEvent,
  type TidemarkEngine,
  type WindowChange,
  type WindowSpec,
} from '@tidemark/engine'
import { seededRandom } from '@tidemark/seeded-random'
import { check } from '../invariant.ts'
import type { Meter } from '../scenario.ts'
import { checkAccounting } from './planRun.ts'

export interface LongRunCase {
  readonly spec: WindowSpec
  readonly lag: number
  readonly allowedLateness: number
  readonly retention: number
  readonly idleTimeout: number
  readonly limits?: EngineLimits | undefined
  readonly sources: number
  readonly keys: number
  readonly seqMode: 'seq' | 'none' | 'mixed'
  readonly rounds: number
  readonly slotMs: number
  readonly stepMs: number
  readonly perRound: number
  readonly jitter: number
  /** Rounds a delivery may be held back (seq gaps while it is). */
  readonly reorderRounds: number
  /** Chance per source and round to replay old events (percent). */
  readonly replayPercent: number
  /** How far back replays reach, in event-time ms: across many windows, past the lateness horizon. */
  readonly replayDepth: number
  readonly replaySize: number
  readonly offlinePercent: number
  readonly offlineRounds: number
  readonly fragment: number
  /**
   * Every `quietEvery` rounds all sources pause long enough for sessions to close (0: never,
   * so a busy key's session never ends).
   */
  readonly quietEvery: number
  readonly rngSeed: number
}

/** Rounds of silence that close every session (gap, disorder and held deliveries included). */
export function quietRounds(c: LongRunCase): number {
  const reach = c.spec.kind === 'session' ? c.spec.gap : c.spec.size
  return Math.ceil((reach + c.jitter + 2) / c.stepMs) + c.reorderRounds + 1
}

export interface MemoryBounds {
  readonly openWindows: number
  readonly cells: number
  readonly dedupEntries: number
  readonly pending: number
}

/**
 * Bounds from the configuration. Event time advances `stepMs` per round for every online
 * source; the watermark trails the slowest active source by `lag`, plus `jitter`, plus an
 * offline source's silence until it counts as idle: at most `offlineRounds` rounds per stretch, its
 * backlog sent as the stretch ends, in a pause (`quietEvery`) too. A source offline right after a
 * pause holds W at its last reading before it, so the pause's event time adds to the lag but not
 * to the windows: no reading falls in a pause, which spans more than `reach + jitter`, so no window
 * lies inside one; splitting the live windows in two costs about `(reach + jitter) / step` more,
 * within the slack below (`+ perWindow + 2`, `2 * step`, `reorderRounds + 1`). A window leaves
 * live state once `end + allowedLateness + retention <= W`, so live windows span at most
 * `holdBack + allowedLateness + retention + reach` of event time per key. A session holds one
 * fragment per source (a source's stretches of activity fold into it), so sessions count
 * like windows: a never-ending session is one window with one cell per source. Fixed specs keep
 * cells per slice part: per source, at most `size / slide` parts per live slice. Seq-less ids
 * are released behind `W - allowedLateness - reach` whenever the count doubles (+4096)
 * since the last release, so at most twice the ids inside that horizon, plus slack.
 */
export function memoryBounds(c: LongRunCase): MemoryBounds {
  const reach = c.spec.kind === 'session' ? c.spec.gap : c.spec.size
  const step = c.spec.kind === 'sliding' ? c.spec.slide : c.spec.kind === 'cumulating' ? c.spec.step : reach
  const perWindow = reach / step
  const idleRounds = Number.isFinite(c.idleTimeout) ? Math.ceil(c.idleTimeout / Math.max(1, c.slotMs)) + 1 : c.offlineRounds
  const silence = Math.min(c.offlineRounds, idleRounds) + c.reorderRounds + 1
  const holdBack = c.lag + c.jitter + silence * c.stepMs
  const span = holdBack + c.allowedLateness + c.retention + reach + 2 * step
  const windowsPerKey = Math.ceil(span / step) + perWindow + 2
  const openWindows = c.keys * windowsPerKey
  // A session holds at most one cell per source; a fixed spec one per source per slice part: the
  // live slices reach `perWindow` past the live windows, and a slice has at most `perWindow` parts.
  const cells = c.spec.kind === 'session' ? openWindows * c.sources : c.keys * (windowsPerKey + perWindow) * c.sources * perWindow
  const perRound = c.sources * c.perRound
  const liveEvents = perRound * (Math.ceil((holdBack + c.allowedLateness + reach) / c.stepMs) + c.reorderRounds + 4)
  const roundEvents = perRound * (c.offlineRounds + 2) + c.sources * c.replaySize
  return {
    openWindows,
    cells,
    dedupEntries: 2 * liveEvents + 4096 + roundEvents,
    pending: (perRound * (Math.ceil((holdBack + reach) / c.stepMs) + 4) + roundEvents) * perWindow,
  }
}

const SOURCES = ['m0', 'm1', '__proto__', 'constructor', 'm4', 'm5', 'toString', 'm7', 'm8', 'm9', 'm10', 'm11']
const KEYS = ['k0', '__proto__', 'k2', 'constructor', 'k4', 'k5']

interface Source {
  readonly name: string
  seq: number
  offlineUntil: number
  readonly backlog: StreamEvent[]
  /** Recent events, oldest first, for replays. */
  readonly recent: StreamEvent[]
}

export function runLong(c: LongRunCase, meter: Meter, observe?: (stats: EngineStats) => void): void {
  const clock = { now: 0 }
  const engine = createEngine({
    windows: c.spec,
    watermark: boundedOutOfOrderness(c.lag),
    allowedLateness: c.allowedLateness,
    retention: c.retention,
    idleTimeout: c.idleTimeout,
    ...(c.limits === undefined ? {} : { limits: c.limits }),
    now: () => clock.now,
    replicaId: 'long',
  }) as TidemarkEngine
  const maxLate = c.limits?.maxLateEvents ?? 10_000
  const bounds = memoryBounds(c)
  // A consumer's view: the last count shown per window (retractions remove it).
  const shown = new Map<string, number>()
  let shownTotal = 0
  engine.subscribe((changes: readonly WindowChange[]) => {
    for (const { type, result } of changes) {
      const id = `${result.key}\u0000${result.start}`
      const before = shown.get(id) ?? 0
      if (type === 'retract') shown.delete(id)
      else shown.set(id, result.count)
      shownTotal += (type === 'retract' ? 0 : result.count) - before
    }
  })
  const random = seededRandom(c.rngSeed)
  const int = (n: number) => Math.floor(random() * n)
  const sources: Source[] = Array.from({ length: c.sources }, (_, i) => ({
    name: SOURCES[i % SOURCES.length] as string,
    seq: 0,
    offlineUntil: -1,
    backlog: [],
    recent: [],
  }))
  const held = new Map<number, StreamEvent[]>()
  const hold = (round: number, e: StreamEvent) => {
    const list = held.get(round)
    if (list === undefined) held.set(round, [e])
    else list.push(e)
  }
  let accepted = 0
  let beyond = 0
  let originals = 0
  let watermark = Number.NEGATIVE_INFINITY
  let maxTs = 0
  let step = 0
  const recentCap = Math.max(8, c.perRound * Math.ceil(c.replayDepth / c.stepMs) + 8)

  const ingest = (events: readonly StreamEvent[]) => {
    if (events.length === 0) return
    const receipt = engine.ingest(events)
    checkAccounting(receipt, events, meter, step)
    check(receipt.rejected === 0, 'long.rejected', () => `valid events refused: ${JSON.stringify(receipt.anomalies.slice(0, 3))}`, step)
    accepted += receipt.accepted
    beyond += receipt.beyondLateness
    meter.events += events.length
    meter.ops++
    const w = engine.watermark()
    check(w >= watermark, 'watermark.monotone', () => `watermark went back from ${watermark} to ${w}`, step)
    watermark = w
    step++
  }

  const checkMemory = (round: number) => {
    meter.checks += 5
    const s = engine.stats()
    observe?.(s)
    const at = `round ${round}, W ${s.watermark}, lag ${s.watermarkLag}`
    check(s.openWindows <= bounds.openWindows, 'memory.openWindows', () => `${s.openWindows} open windows > bound ${bounds.openWindows} (${at})`, step)
    check(s.cells <= bounds.cells, 'memory.cells', () => `${s.cells} cells > bound ${bounds.cells} (${at})`, step)
    check(s.dedupEntries <= bounds.dedupEntries, 'memory.dedupEntries', () => `${s.dedupEntries} dedup entries > bound ${bounds.dedupEntries} (${at})`, step)
    // A session that keeps receiving events within its gap never ends, so its events stay pending: no bound.
    check(c.spec.kind === 'session' || s.pending <= bounds.pending, 'memory.pending', () => `${s.pending} pending > bound ${bounds.pending} (${at})`, step)
    // One entry per refusing spec: a sliding or cumulating event may be refused by one window and admitted by another.
    const pushed = s.lateLane + s.lateLaneTrimmed
    check(
      s.lateLane <= maxLate && (c.spec.kind === 'sliding' || c.spec.kind === 'cumulating' ? pushed >= beyond : pushed === beyond),
      'memory.late-lane',
      () => `late lane ${s.lateLane} (+${s.lateLaneTrimmed} trimmed) for ${beyond} refused, bound ${maxLate}`,
      step,
    )
  }

  for (let r = 0; r < c.rounds; r++) {
    clock.now = r * c.slotMs
    const due: StreamEvent[] = held.get(r) ?? []
    held.delete(r)
    const quiet = c.quietEvery > 0 && r % c.quietEvery >= c.quietEvery - quietRounds(c)
    for (const s of sources) {
      if (quiet) {
        // A pause stops readings, not uploads: a source whose offline stretch ends in a pause sends
        // its backlog then. Kept until its next stretch ended, a backlog held W back across the
        // pause and a second stretch, past the `silence` of `memoryBounds`.
        if (r + 1 === s.offlineUntil) due.push(...s.backlog.splice(0))
        continue
      }
      if (r >= s.offlineUntil && random() * 100 < c.offlinePercent) s.offlineUntil = r + 1 + int(c.offlineRounds)
      // At least one event per round, delivered on time: a source that is online moves its clock
      // every round, so the bounds hold for every run, not just likely ones.
      const n = 1 + int(c.perRound)
      for (let j = 0; j < n; j++) {
        s.seq++
        originals++
        const withSeq = c.seqMode === 'seq' || (c.seqMode === 'mixed' && (s.seq & 1) === 0)
        const e: StreamEvent = {
          id: `${s.name}#${s.seq}`,
          source: s.name,
          ts: r * c.stepMs - int(c.jitter + 1),
          value: int(21) - 10,
          key: KEYS[int(c.keys)] as string,
          ...(withSeq ? { seq: s.seq } : {}),
        }
        maxTs = Math.max(maxTs, e.ts)
        s.recent.push(e)
        if (s.recent.length > recentCap) s.recent.splice(0, s.recent.length - recentCap)
        if (r < s.offlineUntil) s.backlog.push(e)
        else if (j > 0 && c.reorderRounds > 0 && random() < 0.2) hold(r + 1 + int(c.reorderRounds), e)
        else due.push(e)
      }
      if (r + 1 === s.offlineUntil) due.push(...s.backlog.splice(0))
      // An offline device sends nothing, replays included: a replay from its recent events would
      // deliver backlog early, make it speak again with an old clock and hold W past `silence`.
      if (r >= s.offlineUntil && s.recent.length > 0 && random() * 100 < c.replayPercent) {
        // Replay a run of old events: copies spanning many windows, some past the lateness horizon.
        const from = int(s.recent.length)
        for (const e of s.recent.slice(from, from + c.replaySize)) due.push({ ...e })
      }
    }
    // Interleave and fragment.
    for (let i = due.length - 1; i > 0; i--) {
      const j = int(i + 1)
      ;[due[i], due[j]] = [due[j] as StreamEvent, due[i] as StreamEvent]
    }
    let batch: StreamEvent[] = []
    for (const e of due) {
      if (batch.length > 0 && random() * 100 < c.fragment) {
        ingest(batch)
        batch = []
      }
      batch.push(e)
    }
    ingest(batch)
    if (r % 7 === 0) engine.tick()
    if (r % 25 === 0 || r === c.rounds - 1) checkMemory(r)
  }
  for (const s of sources) ingest(s.backlog.splice(0))
  for (const [, events] of [...held].sort(([a], [b]) => a - b)) ingest(events)
  checkMemory(c.rounds)

  meter.checks += 2
  check(accepted <= originals, 'long.double-count', () => `${accepted} accepted of ${originals} distinct events`, step)
  if (c.spec.kind === 'tumbling' || c.spec.kind === 'session') {
    check(shownTotal === accepted, 'long.conservation', () => `folded changes hold ${shownTotal} events, receipts accepted ${accepted}`, step)
  } else {
    const perEvent = c.spec.size / (c.spec.kind === 'sliding' ? c.spec.slide : c.spec.step)
    check(shownTotal <= accepted * perEvent, 'long.double-count', () => `folded ${shownTotal} > ${accepted} x windows per event`, step)
  }

  // Forced past everything: live state empties and a fresh event is accepted.
  const reach = c.spec.kind === 'session' ? c.spec.gap : c.spec.size
  const t = maxTs + reach + c.allowedLateness + c.retention + c.lag + 100
  engine.advanceWatermark(t)
  engine.tick()
  const s = engine.stats()
  meter.checks += 2
  check(s.openWindows === 0 && s.cells === 0 && s.pending === 0, 'memory.drain', () => `after W=${t}: ${s.openWindows} windows, ${s.cells} cells, ${s.pending} pending`, step)
  // Nor is a slice left that holds no cell (one made for an event no window admitted).
  const kept = (engine.checkpoint().slices ?? []).reduce((n, index) => n + index.slices.length, 0)
  meter.checks++
  check(kept === 0, 'memory.drain', () => `after W=${t}: ${kept} slices still kept`, step)
  const probe = engine.ingest([{ id: 'probe', source: 'probe', seq: 1, ts: t + 1, value: 1 }])
  check(probe.accepted === 1, 'liveness.probe', () => `fresh event refused after draining: ${JSON.stringify(probe.anomalies)}`, step)
}
