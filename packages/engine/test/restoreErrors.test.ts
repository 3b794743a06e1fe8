/**
 * A checkpoint `restore` cannot trust (docs/bad-input.md B53): the whole of it is checked before
 * anything changes, so a hand-made, edited or truncated one is refused with a TypeError naming the
 * path and the problem, and the engine stays as it was (it restores a good checkpoint, and
 * ingests, afterwards). Another format, configuration or replica is an Error naming both (B30).
 * What can still fail past the checks, an aggregate's `init` for a cell kept without states,
 * stops the engine (B50). Checkpoints that older engines wrote (format 1, fields they lacked)
 * still restore.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import {
  afterProcessingTime,
  createEngine,
  type EngineCheckpoint,
  latest,
  manual,
  never,
  quantiles,
  session,
  sliding,
  type StreamEvent,
  TidemarkEngine,
  tumbling,
} from '../src/index.ts'
import { reading } from '../src/testing/index.ts'
import { checkpointStates } from '../src/windows/windowState.ts'

afterEach(() => {
  vi.restoreAllMocks()
})

/** A checkpoint's plain data, for a test to edit anywhere. */
// biome-ignore lint/suspicious/noExplicitAny: a test reaches any field however deep and writes there what no type allows.
type Editable = Record<string, any>

const clock = { now: 0 }
const options = {
  windows: [tumbling(10), sliding(20, 5), session(5)],
  watermark: manual(),
  replicaId: 'a',
  now: () => clock.now,
  accumulation: 'discarding' as const,
  trigger: { early: afterProcessingTime(100) },
  maxFutureSkew: 1_000,
  aggregates: { median: quantiles({ at: [0.5] }) },
}

/** What the fixture engine shows, by window, key and start. */
type Shown = [string, string, number, number, number, number][]
const shown = (engine: { results(): readonly { window: string; key: string; start: number; end: number; count: number; sum: number }[] }): Shown =>
  engine.results().map((r) => [r.window, r.key, r.start, r.end, r.count, r.sum])

/**
 * A checkpoint holding each kind of field: sources with seqs above a gap and ids, a peer's clock and
 * cells, fired and unfired windows of the three kinds with discarding parts and armed timers, the
 * late lane, a source of events too far ahead.
 */
function fixture(): { checkpoint: EngineCheckpoint; results: Shown } {
  clock.now = 0
  const engine = new TidemarkEngine(options)
  engine.ingest([reading('d1', 1, 1, 3), reading('d1', 2, 2, 4), reading('d2', 1, 3, 1), reading('d2', 3, 4, 2), reading('d3', undefined, 5, 6), reading('d1', 3, 5_000, 1)])
  engine.advanceWatermark(30)
  engine.ingest([reading('d1', 4, 1, 9), reading('d1', 5, 41, 9)])
  const peer = createEngine({ ...options, replicaId: 'b' })
  peer.ingest([reading('p1', 1, 44, 2)])
  const state = peer.replica.exportState()
  engine.replica.mergeRemote(state.cells, state.clocks)
  return { checkpoint: engine.checkpoint(), results: shown(engine) }
}

/** A deep copy of `checkpoint` with `edit` applied (states and all: `structuredClone` keeps Uint8Arrays, NaN and infinities). */
function edited(checkpoint: EngineCheckpoint, edit: (c: Editable) => void): EngineCheckpoint {
  const copy = structuredClone(checkpoint) as Editable
  edit(copy)
  return copy as EngineCheckpoint
}

/** Everything an engine shows and keeps, to tell that a refused restore changed nothing. */
function observed(engine: TidemarkEngine) {
  return { stats: engine.stats(), results: engine.results(), late: engine.lateEvents(), checkpoint: engine.checkpoint(), nextTickAt: engine.nextTickAt() }
}

/**
 * Restores `bad` into a fresh engine: it must throw `kind` with exactly `message`, change nothing
 * (stats, results, late lane, checkpoint, timers as before), then take the good checkpoint and ingest.
 */
function expectRefused(bad: EngineCheckpoint, message: string | RegExp, kind: ErrorConstructor | TypeErrorConstructor = TypeError): void {
  const { checkpoint, results } = fixture()
  const engine = new TidemarkEngine(options)
  const before = observed(engine)
  let thrown: unknown = null
  try {
    engine.restore(bad)
  } catch (error) {
    thrown = error
  }
  expect(thrown).toBeInstanceOf(kind)
  if (typeof message === 'string') expect((thrown as Error).message).toBe(message)
  else expect((thrown as Error).message).toMatch(message)
  expect(observed(engine)).toEqual(before)
  // Still a fresh engine: it restores the good checkpoint, and serves.
  engine.restore(checkpoint)
  expect(shown(engine)).toEqual(results)
  expect(engine.ingest([reading('d9', 1, 41, 5)]).accepted).toBe(1)
  engine.advanceWatermark(60)
  expect(engine.results({ window: 'tumbling:10' })).toMatchObject([
    { start: 0, count: 5 },
    { start: 40, count: 3 },
  ])
}

/** Index of the first window matching `test` in the fixture's checkpoint (failing when there is none). */
function windowWhere(checkpoint: EngineCheckpoint, test: (w: Editable) => boolean): number {
  const i = checkpoint.windows.findIndex((w) => test(w as Editable))
  expect(i).toBeGreaterThanOrEqual(0)
  return i
}

describe('restore checks the whole checkpoint before it changes anything', () => {
  it('the fixture restores as it was written, also through structuredClone, and its own checkpoint again is the same', () => {
    const { checkpoint, results } = fixture()
    const engine = new TidemarkEngine(options)
    engine.restore(structuredClone(checkpoint))
    expect(shown(engine)).toEqual(results)
    expect(engine.checkpoint()).toEqual(checkpoint)
  })

  it.each<[string, (c: Editable) => void, string]>([
    ['a negative count', (c) => (c.counts.applied = -1), 'checkpoint.counts.applied: expected a whole number >= 0, got -1'],
    ['an anomaly count that is a fraction', (c) => (c.anomalies.duplicate = 1.5), 'checkpoint.anomalies.duplicate: expected a whole number >= 0, got 1.5'],
    ['dedup entries NaN', (c) => (c.dedup.entries = Number.NaN), 'checkpoint.dedup.entries: expected a whole number >= 0, got NaN'],
    ['a batch that is text', (c) => (c.batch = '3'), 'checkpoint.batch: expected a whole number >= 0, got "3"'],
    ['a timer sequence past 2^53', (c) => (c.timerSeq = 2 ** 60), `checkpoint.timerSeq: expected a whole number >= 0, got ${2 ** 60}`],
    ['the late lane total negative', (c) => (c.lateLane.total = -3), 'checkpoint.lateLane.total: expected a whole number >= 0, got -3'],
    ['a window revision of 0.5', (c) => (c.windows[0].revision = 0.5), 'checkpoint.windows[0].revision: expected a whole number >= -1, got 0.5'],
    ['a window with -2 panes', (c) => (c.windows[0].panes = -2), 'checkpoint.windows[0].panes: expected a whole number >= 0, got -2'],
    ['idle sources Infinity', (c) => (c.frontiers.idleSources = Number.POSITIVE_INFINITY), 'checkpoint.frontiers.idleSources: expected a whole number >= 0, got Infinity'],
    ['a future source counted null times', (c) => (c.futureSources[0].count = null), 'checkpoint.futureSources[0].count: expected a whole number >= 0, got null'],
  ])('counters: %s', (_, edit, message) => {
    expectRefused(edited(fixture().checkpoint, edit), message)
  })

  it('timers: a window timer at Infinity or given as text, a timer order below 0, a watermark of NaN, a clock reading that is not a number', () => {
    const { checkpoint } = fixture()
    const armed = windowWhere(checkpoint, (w) => Number.isFinite(w.timerAt))
    expectRefused(edited(checkpoint, (c) => (c.windows[armed].timerAt = Number.POSITIVE_INFINITY)), `checkpoint.windows[${armed}].timerAt: expected a finite time, or NaN for none, got Infinity`)
    expectRefused(edited(checkpoint, (c) => (c.windows[armed].timerAt = '100')), `checkpoint.windows[${armed}].timerAt: expected a finite time, or NaN for none, got "100"`)
    expectRefused(edited(checkpoint, (c) => (c.windows[armed].timerSeq = -1)), `checkpoint.windows[${armed}].timerSeq: expected a whole number >= 0, got -1`)
    expectRefused(edited(checkpoint, (c) => (c.frontiers.watermark = Number.NaN)), 'checkpoint.frontiers.watermark: expected a number, not NaN, got NaN')
    expectRefused(edited(checkpoint, (c) => (c.sources[1].lastSeen = undefined)), 'checkpoint.sources[1].lastSeen: expected a number, got undefined')
  })

  it('clocks: by the rules of peers’ clocks (prefix, version, times, writer), plus their dedup memory, seqs and names once each', () => {
    const { checkpoint } = fixture()
    expectRefused(edited(checkpoint, (c) => (c.sources[3].prefix = -1)), 'checkpoint.sources[3]: prefix must be a safe integer >= 0: -1')
    expectRefused(edited(checkpoint, (c) => (c.sources[0].version = 1.5)), 'checkpoint.sources[0]: version must be a safe integer >= 0: 1.5')
    expectRefused(edited(checkpoint, (c) => (c.sources[0].maxTs = Number.NaN)), 'checkpoint.sources[0]: maxTs must be a time: NaN')
    expectRefused(edited(checkpoint, (c) => (c.sources[0].writer = '')), 'checkpoint.sources[0]: bad source or writer name')
    expectRefused(edited(checkpoint, (c) => (c.sources[0].provable = 'yes')), 'checkpoint.sources[0]: provable must be a boolean')
    expectRefused(edited(checkpoint, (c) => (c.sources[0].highestSeq = -4)), 'checkpoint.sources[0].highestSeq: expected a whole number >= 0, got -4')
    expectRefused(edited(checkpoint, (c) => (c.sources[0].ahead[1][0] = 0)), 'checkpoint.sources[0].ahead[1][0]: expected a whole number >= 1, got 0')
    expectRefused(edited(checkpoint, (c) => (c.sources[2].ids[0][1] = Number.NaN)), `checkpoint.sources[2].ids[0][1]: expected a time within ±${2 ** 53 / 1000} or a safe integer, got NaN`)
    expectRefused(edited(checkpoint, (c) => (c.sources[1].name = 'd1')), 'checkpoint.sources[1].name: expected a source named once, got "d1" again')
  })

  it('cells: by the rules of peers’ cells, in slices, session fragments, tombstones, format-1 window cells and discarding parts', () => {
    const { checkpoint } = fixture()
    const session = windowWhere(checkpoint, (w) => w.fragments.length > 0)
    const pending = windowWhere(checkpoint, (w) => w.pending !== null)
    expectRefused(edited(checkpoint, (c) => (c.slices[0].slices[0][2][0][1][0][1].sum = Number.NaN)), 'checkpoint.slices[0].slices[0][2][0][1][0][1]: sum must be a number: NaN')
    expectRefused(
      edited(checkpoint, (c) => Object.assign(c.slices[1].slices[0][2][0][1][1][1], { min: 5, max: 1 })),
      'checkpoint.slices[1].slices[0][2][0][1][1][1]: min and max must be finite with min <= max: 5, 1',
    )
    expectRefused(edited(checkpoint, (c) => (c.windows[session].fragments[0][2].count = -1)), `checkpoint.windows[${session}].fragments[0][2]: count must be an integer in 0..2^40: -1`)
    expectRefused(edited(checkpoint, (c) => (c.windows[session].fragments[0][2].sum = 1e6)), `checkpoint.windows[${session}].fragments[0][2]: sum 1000000 is impossible for 2 values in [3, 4]`)
    expectRefused(edited(checkpoint, (c) => (c.windows[pending].pending.max = Number.NaN)), `checkpoint.windows[${pending}].pending: min and max must be finite with min <= max: 9, NaN`)
    expectRefused(
      edited(checkpoint, (c) => (c.sessions[0].tombstones = [['', [['d1', 1, { count: 0, sum: 0, min: Number.NaN, max: 0, maxTs: 0, version: 1 }]]]])),
      'checkpoint.sessions[0].tombstones[0][1][0][2]: a tombstone must not hold NaN',
    )
    expectRefused(edited(checkpoint, (c) => (c.windows[0].cells = [['d1', 'cell']])), 'checkpoint.windows[0].cells[0][1]: expected a cell, got "cell"')
  })

  it('windows: their flags, basis, key, start and end, results and history', () => {
    const { checkpoint } = fixture()
    expectRefused(edited(checkpoint, (c) => (c.windows[0].basis = 'maybe')), 'checkpoint.windows[0].basis: expected one of "proven", "derived", "fallback", "unknown", got "maybe"')
    expectRefused(edited(checkpoint, (c) => (c.windows[0].fired = 1)), 'checkpoint.windows[0].fired: expected true or false, got 1')
    expectRefused(edited(checkpoint, (c) => (c.windows[0].key = 5)), 'checkpoint.windows[0].key: expected a string of at most 1024 characters, got 5')
    expectRefused(edited(checkpoint, (c) => (c.windows[1].start = Number.NaN)), `checkpoint.windows[1].start: expected a time within ±${2 ** 53 / 1000} or a safe integer, got NaN`)
    expectRefused(edited(checkpoint, (c) => (c.windows[1].end = Number.NaN)), 'checkpoint.windows[1].end: expected a number, not NaN, got NaN')
    expectRefused(edited(checkpoint, (c) => (c.windows[0].emitted.status = 'done')), 'checkpoint.windows[0].emitted.status: expected one of "provisional", "on_time", "corrected", got "done"')
    expectRefused(
      edited(checkpoint, (c) => (c.windows[0].history = [{ ...c.windows[0].history[0], pane: { timing: 'on_time', index: -1, onTimeIndex: 0 } }])),
      'checkpoint.windows[0].history[0].pane.index: expected a whole number >= 0, got -1',
    )
    expectRefused(edited(checkpoint, (c) => (c.windows[0].dirty = 'no')), 'checkpoint.windows[0].dirty: expected true or false, got "no"')
  })

  it("fixed windows and slices off their spec's grid (restored, the watermark passing such a window looped for ever), a session ending before it starts", () => {
    const { checkpoint } = fixture()
    const session = windowWhere(checkpoint, (w) => w.window === 'session:5')
    expect(checkpoint.windows[1]).toMatchObject({ window: 'tumbling:10', start: 40, end: 50 })
    expectRefused(edited(checkpoint, (c) => (c.windows[1].end = 51)), 'checkpoint.windows[1]: expected a window of tumbling:10, got [40, 51)')
    expectRefused(edited(checkpoint, (c) => (c.windows[2].start += 1)), 'checkpoint.windows[2]: expected a window of sliding:20:5, got [1, 20)')
    expectRefused(edited(checkpoint, (c) => (c.windows[session].end = c.windows[session].start)), `checkpoint.windows[${session}]: expected a window of session:5, got [1, 1)`)
    expectRefused(edited(checkpoint, (c) => (c.slices[0].slices[1][1] = 41)), 'checkpoint.slices[0].slices[1]: expected a slice of tumbling:10, got one at 41 counted from the window ending at 50')
    expectRefused(edited(checkpoint, (c) => (c.slices[1].slices[0][2][0][0] = 25)), 'checkpoint.slices[1].slices[0]: expected a slice of sliding:20:5, got one at 0 counted from the window ending at 25')
  })

  it('what is listed twice: a window, two sessions of one key that overlap, a fragment, a slice, a part or a cell (restored, each counted twice or stopped the engine)', () => {
    const { checkpoint } = fixture()
    const n = checkpoint.windows.length
    const session = windowWhere(checkpoint, (w) => w.window === 'session:5' && w.fragments.length > 1)
    const [start, end] = [checkpoint.windows[session]?.start, checkpoint.windows[session]?.end]
    expectRefused(edited(checkpoint, (c) => c.windows.push(structuredClone(c.windows[1]))), `checkpoint.windows[${n}]: the window at [1] listed again`)
    expectRefused(
      edited(checkpoint, (c) => c.windows.push({ ...structuredClone(c.windows[session]), start: (start as number) + 1 })),
      `checkpoint.windows[${n}]: a session of the key of the one at [${session}], overlapping it: [${(start as number) + 1}, ${end}) and [${start}, ${end})`,
    )
    expectRefused(
      edited(checkpoint, (c) => c.windows[session].fragments.push(structuredClone(c.windows[session].fragments[0]))),
      `checkpoint.windows[${session}].fragments[${checkpoint.windows[session]?.fragments.length}]: the source's fragment at [0] listed again`,
    )
    const slices = checkpoint.slices?.[0]?.slices.length as number
    expectRefused(edited(checkpoint, (c) => c.slices[0].slices.push(structuredClone(c.slices[0].slices[0]))), `checkpoint.slices[0].slices[${slices}]: the slice at [0] listed again`)
    expectRefused(
      edited(checkpoint, (c) => c.slices[0].slices[0][2].push(structuredClone(c.slices[0].slices[0][2][0]))),
      'checkpoint.slices[0].slices[0][2][1]: the part at [0] listed again',
    )
    expectRefused(
      edited(checkpoint, (c) => c.slices[0].slices[0][2][0][1].push(structuredClone(c.slices[0].slices[0][2][0][1][0]))),
      "checkpoint.slices[0].slices[0][2][0][1][3]: the source's cell at [0] listed again",
    )
    expectRefused(edited(checkpoint, (c) => c.slices.push(structuredClone(c.slices[0]))), "checkpoint.slices[2]: the spec's state at [0] listed again")
    expectRefused(edited(checkpoint, (c) => c.sessions.push(structuredClone(c.sessions[0]))), "checkpoint.sessions[1]: the spec's state at [0] listed again")
  })

  it('dedup memory is counted from the clocks: a count that says more than they hold does not refuse events out of seq order as overflow', () => {
    const { checkpoint } = fixture()
    const engine = new TidemarkEngine({ ...options, limits: { maxDedupEntries: 100 } })
    engine.restore(edited(checkpoint, (c) => (c.dedup.entries = 1_000_000)))
    const held = engine.stats().dedupEntries
    expect(held).toBe(checkpoint.dedup.entries)
    expect(held).toBeGreaterThan(0)
    // Seq 9 above d2's gap adds to dedup memory: with the count read as written it was refused.
    const receipt = engine.ingest([reading('d2', 9, 42, 1)])
    expect(receipt.anomalies).toEqual([])
    expect(receipt.accepted).toBe(1)
    expect(engine.stats().dedupEntries).toBe(held + 1)
  })

  it("the timer order continues past every restored window's timer: a timer armed after the restore fires after the restored ones due with it", () => {
    const { checkpoint } = fixture()
    const armed = checkpoint.windows.filter((w) => Number.isFinite(w.timerAt)).map((w) => w.timerSeq ?? 0)
    expect(Math.max(...armed)).toBe(checkpoint.timerSeq)
    /** The windows of the panes the restored engine emits when its timers are due, after one more event arms new ones. */
    const panes = (restored: EngineCheckpoint): string[] => {
      clock.now = 0
      const engine = new TidemarkEngine(options)
      engine.restore(restored)
      engine.ingest([reading('d1', 6, 61, 2)])
      const seen: string[] = []
      engine.subscribe((changes) => {
        for (const { result } of changes) seen.push(`${result.window} [${result.start}, ${result.end})`)
      })
      clock.now = 100
      engine.tick()
      return seen
    }
    const inOrder = panes(checkpoint)
    // The new event's windows come last: their timers were armed after the restored ones.
    expect(inOrder).toEqual([
      ...['tumbling:10 [40, 50)', 'sliding:20:5 [40, 60)', 'sliding:20:5 [35, 55)', 'sliding:20:5 [30, 50)', 'sliding:20:5 [25, 45)', 'session:5 [41, 49)'],
      ...['tumbling:10 [60, 70)', 'sliding:20:5 [60, 80)', 'sliding:20:5 [55, 75)', 'sliding:20:5 [50, 70)', 'sliding:20:5 [45, 65)', 'session:5 [61, 66)'],
    ])
    // A top-level order below the windows' (a hand-made checkpoint): the same order.
    expect(panes(edited(checkpoint, (c) => (c.timerSeq = 0)))).toEqual(inOrder)
  })

  it('the late lane: events by the rules of ingest, reasons that are anomaly reasons', () => {
    const { checkpoint } = fixture()
    expectRefused(edited(checkpoint, (c) => (c.lateLane.entries[1].event.ts = Number.NaN)), `checkpoint.lateLane.entries[1].event: ts must be a finite number within ±${2 ** 53 / 1000} ms, got NaN`)
    expectRefused(edited(checkpoint, (c) => (c.lateLane.entries[0].event.id = '')), 'checkpoint.lateLane.entries[0].event: id must be a non-empty string')
    expectRefused(edited(checkpoint, (c) => (c.lateLane.entries[0].event = null)), 'checkpoint.lateLane.entries[0].event: expected an event object, got null')
    expectRefused(edited(checkpoint, (c) => (c.lateLane.entries[0].reason = 'late')), /^checkpoint\.lateLane\.entries\[0\]\.reason: expected one of "invalid_event", .*"corrupt_record", got "late"$/)
    expectRefused(edited(checkpoint, (c) => (c.lateLane.entries[2].window = 7)), 'checkpoint.lateLane.entries[2].window: expected a string of 1..1024 characters, got 7')
  })

  it('structure: lists that are not arrays, objects that are missing, a checkpoint that is not one', () => {
    const { checkpoint } = fixture()
    expectRefused(edited(checkpoint, (c) => (c.sources = {})), 'checkpoint.sources: expected an array, got an object')
    expectRefused(edited(checkpoint, (c) => (c.windows = null)), 'checkpoint.windows: expected an array, got null')
    expectRefused(edited(checkpoint, (c) => (c.sources[0].ahead = 'x')), 'checkpoint.sources[0].ahead: expected an array, got "x"')
    expectRefused(edited(checkpoint, (c) => delete c.lateLane), 'checkpoint.lateLane: expected an object, got undefined')
    expectRefused(edited(checkpoint, (c) => (c.slices[0].slices[1] = { 0: '', 1: 40, 2: [] })), 'checkpoint.slices[0].slices[1]: expected an array, got an object')
    expectRefused(edited(checkpoint, (c) => (c.windows.length += 1)), `checkpoint.windows[${checkpoint.windows.length}]: expected an object, got undefined`)
    expectRefused(null as unknown as EngineCheckpoint, 'checkpoint: expected an engine checkpoint, got null')
    // Truncated: a checkpoint cut after its windows.
    const { lateLane, counts, anomalies, dedup, ...cut } = checkpoint
    expect([lateLane, counts, anomalies, dedup]).not.toContain(undefined)
    expectRefused(cut as EngineCheckpoint, 'checkpoint.lateLane: expected an object, got undefined')
  })

  it('a window spec this engine does not have, in windows, sessions or slices (under a matching configuration)', () => {
    const { checkpoint } = fixture()
    const specs = 'one of "tumbling:10", "sliding:20:5", "session:5"'
    expectRefused(edited(checkpoint, (c) => c.windows.push({ ...c.windows[0], window: 'tumbling:5' })), `checkpoint.windows[${checkpoint.windows.length}].window: expected ${specs}, got "tumbling:5"`)
    expectRefused(edited(checkpoint, (c) => (c.sessions[0].window = 'session:9')), `checkpoint.sessions[0].window: expected ${specs}, got "session:9"`)
    expectRefused(edited(checkpoint, (c) => (c.slices[1].window = 'sliding:20:10')), `checkpoint.slices[1].window: expected ${specs}, got "sliding:20:10"`)
  })

  it('aggregate states that do not decode, or are not a list of bytes, are refused with the aggregate named', () => {
    const { checkpoint } = fixture()
    const session = windowWhere(checkpoint, (w) => w.fragments.length > 0)
    const pending = windowWhere(checkpoint, (w) => w.pendingStates !== undefined)
    expectRefused(
      edited(checkpoint, (c) => (c.slices[0].slices[0][2][0][1][2][2] = [new Uint8Array([255, 1, 2])])),
      /^checkpoint\.slices\[0\]\.slices\[0\]\[2\]\[0\]\[1\]\[2\]\[2\]: aggregate "median": /,
    )
    expectRefused(edited(checkpoint, (c) => (c.windows[session].fragments[1][3] = [])), `checkpoint.windows[${session}].fragments[1][3]: 0 aggregate states, this engine keeps 1`)
    expectRefused(edited(checkpoint, (c) => (c.windows[pending].pendingStates = ['x'])), `checkpoint.windows[${pending}].pendingStates: expected a list of encoded aggregate states (Uint8Array), got an array`)
  })

  it("cells and their states as peers' are held: a slice cell whose last event lies outside its slice, a sketch of more values than its cell counted", () => {
    const { checkpoint } = fixture()
    const session = windowWhere(checkpoint, (w) => w.window === 'session:5' && w.fragments.length > 2)
    expect(checkpoint.slices?.[0]?.slices[0]?.[1]).toBe(0)
    // Restored, its windows would show a last event past their end, and it would count in windows past its slice's.
    expectRefused(
      edited(checkpoint, (c) => (c.slices[0].slices[0][2][0][1][0][1].maxTs = 25)),
      'checkpoint.slices[0].slices[0][2][0][1][0][1]: expected a cell of the slice [0, 10), got one whose last event is at 25',
    )
    expect(checkpoint.slices?.[1]?.slices[1]?.[1]).toBe(5)
    expectRefused(
      edited(checkpoint, (c) => (c.slices[1].slices[1][2][0][1][0][1].maxTs = 3)),
      'checkpoint.slices[1].slices[1][2][0][1][0][1]: expected a cell of the slice [5, 10), got one whose last event is at 3',
    )
    // A format-1 window's cells go to the window's slice: held to it the same way.
    expectRefused(
      edited(checkpoint, (c) => (c.windows[0].cells = [['d9', { count: 1, sum: 1, min: 1, max: 1, maxTs: 10, version: 1 }]])),
      'checkpoint.windows[0].cells[0][1]: expected a cell of the slice [0, 10), got one whose last event is at 10',
    )
    // d3's cell counted one event; d1's states hold two values.
    expectRefused(
      edited(checkpoint, (c) => (c.slices[0].slices[0][2][0][1][2][2] = structuredClone(c.slices[0].slices[0][2][0][1][0][2]))),
      'checkpoint.slices[0].slices[0][2][0][1][2][2]: aggregate "median" (quantiles): 2 values in a cell of 1 events',
    )
    expectRefused(
      edited(checkpoint, (c) => (c.windows[session].fragments[2][3] = structuredClone(c.windows[session].fragments[0][3]))),
      `checkpoint.windows[${session}].fragments[2][3]: aggregate "median" (quantiles): 2 values in a cell of 1 events`,
    )
    // A discarding pane's part: its states hold what arrived since the last pane, no more values than it counted.
    const pending = windowWhere(checkpoint, (w) => w.pending?.count === 1 && w.pendingStates !== undefined)
    expectRefused(
      edited(checkpoint, (c) => (c.windows[pending].pendingStates = structuredClone(c.slices[0].slices[0][2][0][1][0][2]))),
      `checkpoint.windows[${pending}].pendingStates: aggregate "median" (quantiles): 2 values in a cell of 1 events`,
    )
  })

  it.each([
    ['a fixed window', tumbling(10), (c: Editable) => c.slices[0].slices[0][2][0][1][0]],
    ['a session', session(5), (c: Editable) => c.windows[0].fragments[0]],
  ] as const)("a latest whose event lies past its cell's last event (it would outrank every later event for good), in %s's cell", (_, spec, cellOf) => {
    const last = latest()
    const withLatest = { windows: spec, watermark: manual(), replicaId: 'a', now: () => 0, aggregates: { last } }
    const engine = new TidemarkEngine(withLatest)
    engine.ingest([reading('d1', 1, 1, 3), reading('d1', 2, 2, 4)])
    const checkpoint = engine.checkpoint()
    const target = new TidemarkEngine(withLatest)
    const before = observed(target)
    const states = (c: Editable) => cellOf(c)[spec.kind === 'session' ? 3 : 2]
    const at = spec.kind === 'session' ? 'windows[0].fragments[0][3]' : 'slices[0].slices[0][2][0][1][0][2]'
    const bad = edited(checkpoint, (c) => (states(c)[0] = last.encode({ ts: 9, source: 'd1', seq: 2, value: 4 })))
    expect(() => target.restore(bad)).toThrow(new TypeError(`checkpoint.${at}: aggregate "last" (latest): event time 9 is past the cell's last event time 2`))
    expect(observed(target)).toEqual(before)
    target.restore(checkpoint)
    expect(target.results()).toEqual(engine.results())
  })

  it("a latest in a fixed window's discarding part whose event lies past the window's end is refused", () => {
    const last = latest()
    const discarding = { windows: tumbling(10), watermark: manual(), replicaId: 'a', now: () => 0, aggregates: { last }, accumulation: 'discarding' as const, trigger: { early: never() } }
    const engine = new TidemarkEngine(discarding)
    engine.ingest([reading('d1', 1, 1, 3), reading('d1', 2, 2, 4)])
    const checkpoint = engine.checkpoint()
    expect(checkpoint.windows[0]?.pending?.count).toBe(2)
    const target = new TidemarkEngine(discarding)
    const before = observed(target)
    const at = (ts: number) => edited(checkpoint, (c) => (c.windows[0].pendingStates = [last.encode({ ts, source: 'd1', seq: 2, value: 7 })]))
    // Held to the window's end (the part keeps no last event time).
    expect(() => target.restore(at(11))).toThrow(new TypeError(`checkpoint.windows[0].pendingStates: aggregate "last" (latest): event time 11 is past the cell's last event time 10`))
    expect(observed(target)).toEqual(before)
    // Within the window: restored, and shown by the next pane.
    target.restore(at(9))
    target.advanceWatermark(10)
    expect(target.results()[0]?.aggregates).toEqual({ last: 7 })
  })

  it("an aggregate's decode that calls the engine is refused inside it (B51), and the restore is refused: nothing changed; states are decoded once", () => {
    const median = quantiles({ at: [0.5] })
    const withMedian = { windows: tumbling(10), watermark: manual(), replicaId: 'a', now: () => 0, aggregates: { median } }
    const source = new TidemarkEngine(withMedian)
    source.ingest([reading('d1', 1, 1, 3), reading('d2', 1, 2, 4)])
    const checkpoint = source.checkpoint()
    const engine = new TidemarkEngine(withMedian)
    // Refused past its states (dedup is checked last): what was decoded is let go.
    expect(() => engine.restore(edited(checkpoint, (c) => (c.dedup.entries = -1)))).toThrow('checkpoint.dedup.entries: expected a whole number >= 0, got -1')
    expect(checkpointStates.size).toBe(0)
    const decode = median.decode
    let inner: unknown = null
    const decoding = vi.spyOn(median, 'decode').mockImplementation((bytes) => {
      try {
        engine.ingest([reading('x', 1, 1, 1)])
      } catch (error) {
        inner = error
        throw error
      }
      return decode(bytes)
    })
    expect(() => engine.restore(checkpoint)).toThrow(/^checkpoint\.slices\[0\]\.slices\[0\]\[2\]\[0\]\[1\]\[0\]\[2\]: aggregate "median": .*engine called from inside its own operation/)
    expect(String(inner)).toMatch(/engine called from inside its own operation/)
    expect(engine.stats()).toMatchObject({ ingested: 0, sources: 0 })
    expect(engine.results()).toEqual([])
    // Nothing decoded is kept past a refused restore.
    expect(checkpointStates.size).toBe(0)
    // Decoded by the checks, once per cell: the restore takes those states.
    decoding.mockImplementation(decode)
    decoding.mockClear()
    engine.restore(checkpoint)
    expect(decoding).toHaveBeenCalledTimes(2)
    expect(checkpointStates.size).toBe(0)
    expect(engine.results()).toEqual(source.results())
    vi.restoreAllMocks()
  })

  it('another format, configuration or replica: an Error naming both, before anything changes', () => {
    const { checkpoint } = fixture()
    expectRefused(edited(checkpoint, (c) => (c.format = 3)), 'unknown checkpoint format 3', Error)
    expectRefused(edited(checkpoint, (c) => (c.configuration = '{}')), /^checkpoint was written with \{\}, this engine has /, Error)
    expectRefused(edited(checkpoint, (c) => (c.replicaId = 'b')), "checkpoint was written by replica 'b', this engine is replica 'a'", Error)
  })
})

describe('restore of a checkpoint that passed the checks but cannot be read to the end (B50)', () => {
  it("an aggregate's init that throws, for a cell the checkpoint kept without states: restore throws, and the half restored engine stops instead of serving", () => {
    const median = quantiles({ at: [0.5] })
    const withMedian = { windows: tumbling(10), watermark: manual(), replicaId: 'a', now: () => 0, aggregates: { median } }
    const source = new TidemarkEngine(withMedian)
    source.ingest([reading('d1', 1, 1, 3), reading('d1', 2, 12, 4)])
    // States are optional where older checkpoints lacked them: restore makes them with `init`.
    const stateless = edited(source.checkpoint(), (c) => c.slices[0].slices[1][2][0][1][0].splice(2, 1))
    const engine = new TidemarkEngine(withMedian)
    vi.spyOn(median, 'init').mockImplementation(() => {
      throw new Error('no state today')
    })
    expect(() => engine.restore(stateless)).toThrow(/^engine stopped: no state today/)
    expect(() => engine.ingest([reading('d1', 3, 3, 5)])).toThrow(/^engine stopped/)
    expect(() => engine.checkpoint()).toThrow(/^engine stopped/)
    vi.restoreAllMocks()
    const fresh = new TidemarkEngine(withMedian)
    fresh.restore(stateless)
    expect(fresh.results()).toEqual(source.results())
  })
})

/** A result as engines before panes wrote it. */
function withoutPane({ pane, ...result }: Editable): Editable {
  expect(pane).toBeDefined()
  return result
}

describe('checkpoints older engines wrote still restore', () => {
  const plain = { windows: [tumbling(10), session(5)], watermark: manual(), replicaId: 'a', now: () => 0 }

  it('format 1: tumbling cells on their windows, no slices, no pane counters, timers, highest seqs, holders, future sources or later counters', () => {
    const engine = new TidemarkEngine(plain)
    const events: StreamEvent[] = [reading('d1', 1, 1, 3), reading('d1', 3, 2, 4), reading('d2', undefined, 12, 5), reading('d1', 4, 14, 1)]
    engine.ingest(events)
    engine.advanceWatermark(11)
    const now = engine.checkpoint() as Editable
    const cellsOf = new Map<string, unknown[]>()
    for (const [key, start, parts] of now.slices[0].slices) cellsOf.set(`${key}@${start}`, parts[0][1])
    const old: Editable = {
      format: 1,
      configuration: now.configuration,
      replicaId: now.replicaId,
      batch: now.batch,
      frontiers: { watermark: now.frontiers.watermark, strictWatermark: now.frontiers.strictWatermark, maxTs: now.frontiers.maxTs, proof: now.frontiers.proof, idleSources: now.frontiers.idleSources },
      sources: now.sources.map(({ highestSeq, finished, ...clock }: Editable) => clock),
      windows: now.windows.map((w: Editable) => ({
        window: w.window,
        key: w.key,
        start: w.start,
        end: w.end,
        fired: w.fired,
        final: w.final,
        revision: w.revision,
        basis: w.basis,
        basisEnd: w.basisEnd,
        emitted: w.emitted === null ? null : withoutPane(w.emitted),
        history: w.history.map(withoutPane),
        cells: w.window === 'tumbling:10' ? (cellsOf.get(`${w.key}@${w.start}`) ?? []) : [],
        fragments: w.fragments,
      })),
      sessions: now.sessions,
      lateLane: now.lateLane,
      counts: { ingested: now.counts.ingested, applied: now.counts.applied, duplicates: now.counts.duplicates, beyondLateness: now.counts.beyondLateness },
      anomalies: { invalid_event: 0, duplicate: 0, beyond_lateness: 0 },
      dedup: now.dedup,
    }
    expect(old.windows.some((w: Editable) => w.cells.length > 0)).toBe(true)
    const restored = new TidemarkEngine(plain)
    restored.restore(old as EngineCheckpoint)
    expect(shown(restored)).toEqual(shown(engine))
    // The seq above the gap is still remembered: its copy is a duplicate, the gap's seq is new.
    expect(restored.ingest([reading('d1', 3, 2, 4), reading('d1', 2, 13, 2)])).toMatchObject({ accepted: 1, duplicates: 1 })
    expect(restored.nextSeq('d1')).toBe(5)
    expect(restored.results({ window: 'tumbling:10' })).toMatchObject([{ start: 0 }, { start: 10, count: 3, sum: 8 }])
  })

  it('format 2 without any of the fields added since (every optional field left out)', () => {
    const { checkpoint, results } = fixture()
    const bare = edited(checkpoint, (c) => {
      for (const field of ['slices', 'timerSeq', 'futureSources']) delete c[field]
      delete c.frontiers.heldBy
      for (const clock of c.sources) delete clock.finished
      for (const w of c.windows) for (const field of ['panes', 'onTimePanes', 'dirty', 'timerAt', 'timerSeq', 'pending', 'pendingStates', 'whole']) delete w[field]
      for (const w of c.windows) for (const f of w.fragments) f.length = 3
    })
    const engine = new TidemarkEngine(options)
    engine.restore(bare)
    // Without its slices, fixed windows show nothing until new events come: what such a checkpoint held.
    expect(shown(engine).filter(([window]) => window === 'session:5')).toEqual(results.filter(([window]) => window === 'session:5'))
    expect(engine.ingest([reading('d9', 1, 41, 5)]).accepted).toBe(1)
  })
})
