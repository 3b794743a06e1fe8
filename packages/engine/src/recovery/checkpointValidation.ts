/**
 * What `restore` checks before it changes anything (docs/bad-input.md B53): the whole checkpoint
 * against what `captureEngine` writes. Every field's type and range; cells, their aggregate states
 * and source clocks by the rules peers' cells and clocks pass (`cellValuesProblem`, `cellInSlice`,
 * `AggregateSet.disagreement`, `clockEntryProblem`); late events
 * by the rules of ingest; window specs this engine has; and aggregate states, decoded here (the
 * restore that follows takes them, `checkpointStates`). Fields that older checkpoints lack may be
 * absent. A checkpoint that fails is refused with a TypeError naming the path and the problem:
 * `checkpoint.sources[3]: prefix must be a safe integer >= 0: -1`.
 */
import type { AggregateSet, CellEvents } from '../aggregates/aggregateSet.ts'
import { ANOMALY_REASONS, type AnomalyReason } from '../input/anomaly.ts'
import { configurationOf, type ResolvedOptions } from '../config/engineOptions.ts'
import { messageOf } from '../errors/errorMessage.ts'
import { MAX_ABS_TS, MAX_NAME_LENGTH } from '../input/event.ts'
import { describeInvalid, invalidReason } from '../input/eventValidation.ts'
import type { Cell } from '../lattice/cell.ts'
import { cellValuesProblem, isName, isStateList, isWindowStart } from '../lattice/cellGroupValidation.ts'
import { clockEntryProblem } from '../replica/remoteValidation.ts'
import type { ClockEntry } from '../replica/replicaPort.ts'
import { cellInSlice } from '../windows/sliceParts.ts'
import { checkpointStates, fragmentId } from '../windows/windowState.ts'
import { alignedStart, sliceLength, type WindowSpec } from '../windows/windowSpec.ts'
import type { EngineCheckpoint, SliceIndexSnapshot, SourceClockSnapshot, WindowSnapshot } from './engineCheckpoint.ts'

/** What a checkpoint is checked against: the engine about to restore it. */
export interface RestoreTarget {
  readonly options: ResolvedOptions
  readonly replicaId: string
  readonly counts: Readonly<Record<string, number>>
  readonly anomalies: Readonly<Record<AnomalyReason, number>>
}

/**
 * Why a value cannot be restored, as the rest of its path then the problem (`[3].prefix: expected
 * …`), or null. Paths are put together only on the way out of a failure: a large checkpoint's
 * cells are checked without a string each.
 */
type Check = (value: unknown) => string | null

/** An object's fields, or a tuple's items, each with its check. */
type Shape = Readonly<Record<string, Check>> | readonly Check[]

/**
 * Why `checkpoint` cannot be restored into `target`, or null; nothing is changed either way. Another
 * format, configuration or replica is an `Error` naming both, as before; a field out of type or range
 * (or an aggregate state that does not decode) a `TypeError` naming its path. The states it decoded
 * wait in `checkpointStates` for the restore, which clears them when it ends.
 *
 * @example
 * const refusal = checkpointRefusal(checkpoint, parts)
 * if (refusal !== null) throw refusal // checkpoint.windows[0].revision: expected a whole number >= -1, got 1.5
 */
export function checkpointRefusal(checkpoint: EngineCheckpoint, target: RestoreTarget): Error | null {
  const c = checkpoint as Partial<EngineCheckpoint> | null
  try {
    if (typeof c !== 'object' || c === null) return new TypeError(`checkpoint: expected an engine checkpoint, got ${shown(c)}`)
    if (c.format !== 1 && c.format !== 2) return new Error(`unknown checkpoint format ${String(c.format)}`)
    const configuration = configurationOf(target.options)
    if (c.configuration !== configuration) return new Error(`checkpoint was written with ${c.configuration}, this engine has ${configuration}`)
    // Its sources are that replica's: restored under another id, every event of theirs would be a `source_conflict`.
    if (c.replicaId !== target.replicaId) return new Error(`checkpoint was written by replica '${c.replicaId}', this engine is replica '${target.replicaId}'`)
    const problem = checkpointShape(target)(c)
    return problem === null ? null : new TypeError(`checkpoint${problem}`)
  } catch (error) {
    // A field that throws when read (a getter, a revoked Proxy): refused as well, nothing changed.
    return new TypeError(`checkpoint could not be read: ${messageOf(error)}`)
  }
}

const is =
  (test: (value: unknown) => boolean, expected: string): Check =>
  (value) =>
    test(value) ? null : `: expected ${expected}, got ${shown(value)}`

const optional =
  (check: Check): Check =>
  (value) =>
    value === undefined ? null : check(value)

const nullable =
  (check: Check): Check =>
  (value) =>
    value === null ? null : check(value)

/** `check`, then, once it passed, `next` on the same value. */
const then =
  <T>(check: Check, next: (value: T) => string | null): Check =>
  (value) =>
    check(value) ?? next(value as T)

function listOf(item: Check): Check {
  return (value) => {
    if (!Array.isArray(value)) return `: expected an array, got ${shown(value)}`
    // Indexed, not `for of`: a hole is checked as undefined.
    for (let i = 0; i < value.length; i++) {
      const problem = item(value[i])
      if (problem !== null) return `[${i}]${problem}`
    }
    return null
  }
}

/** An object with these fields, or (a list of checks) a tuple with these items. */
function shaped(shape: Shape): Check {
  const tuple = Array.isArray(shape)
  // Listed once: a checkpoint holds many windows and cells of each shape.
  const fields = Object.entries(shape)
  return (value) => {
    if (tuple ? !Array.isArray(value) : typeof value !== 'object' || value === null) return `: expected ${tuple ? 'an array' : 'an object'}, got ${shown(value)}`
    for (let i = 0; i < fields.length; i++) {
      const [field, check] = fields[i] as [string, Check]
      const problem = check((value as Record<string, unknown>)[field])
      if (problem !== null) return `${tuple ? `[${field}]` : `.${field}`}${problem}`
    }
    return null
  }
}

const atLeast = (min: number): Check => is((v) => Number.isSafeInteger(v) && (v as number) >= min, `a whole number >= ${min}`)
const whole = atLeast(0)
const revision = atLeast(-1)
/** A frontier, a value or a bound: ±Infinity is one, NaN is not. */
const number = is((v) => typeof v === 'number' && !Number.isNaN(v), 'a number, not NaN')
/** A processing time as the clock read it, what a peer's clock did not say, or a result's sum of +Infinity and -Infinity cells: NaN too. */
const reading = is((v) => typeof v === 'number', 'a number')
const timer = is((v) => typeof v === 'number' && (Number.isFinite(v) || Number.isNaN(v)), 'a finite time, or NaN for none')
/** Where a window, slice or fragment starts, or when an event was: as peers' cells may start. */
const start = is(isWindowStart, `a time within ±${MAX_ABS_TS} or a safe integer`)
const flag = is((v) => typeof v === 'boolean', 'true or false')
const name = is((v) => isName(v, 1), `a string of 1..${MAX_NAME_LENGTH} characters`)
const key = is((v) => isName(v, 0), `a string of at most ${MAX_NAME_LENGTH} characters`)
const stateList = is(isStateList, 'a list of encoded aggregate states (Uint8Array)')
const oneOf = (values: readonly unknown[]): Check => is((v) => values.includes(v), `one of ${values.map(shown).join(', ')}`)

/**
 * The same rule as peers' cells: values a lattice join can take. A discarding window's `pending`
 * part keeps no event time (`timed` false): panes show its count, sum, min and max only.
 */
const cellOf =
  (timed: boolean): Check =>
  (value) => {
    if (typeof value !== 'object' || value === null) return `: expected a cell, got ${shown(value)}`
    const c = value as Cell
    const problem = cellValuesProblem(c.count, c.sum, c.min, c.max, timed ? c.maxTs : 0, c.version)
    return problem === null ? null : `: ${problem}`
  }
const cell = cellOf(true)

const BASES = ['proven', 'derived', 'fallback', 'unknown']
const result = shaped({
  window: name,
  key,
  start,
  end: number,
  count: whole,
  sum: reading,
  min: number,
  max: number,
  mean: reading,
  status: oneOf(['provisional', 'on_time', 'corrected']),
  revision,
  final: flag,
  basis: oneOf(BASES),
  pane: optional(shaped({ timing: oneOf(['early', 'on_time', 'late']), index: whole, onTimeIndex: revision })),
})

/** Every check of a checkpoint for `target`; decoded aggregate states wait in `checkpointStates`. */
function checkpointShape(target: RestoreTarget): Check {
  const aggregates: AggregateSet | null = target.options.aggregates
  const specs = new Map(target.options.specs.map((s) => [s.id, s]))
  const spec = oneOf([...specs.keys()])
  /**
   * The states restore decodes (a cell's with events; `count` 1 for slices' cells, which restore
   * always decodes), decoded once here; held to the events of `cell`, when given, as peers' are.
   */
  const states = (bytes: unknown, count: number, at: string, cell: CellEvents | null = null): string | null => {
    if (aggregates === null || bytes === undefined || count === 0) return null
    try {
      const decoded = aggregates.decode(bytes as Uint8Array[])
      checkpointStates.set(bytes as Uint8Array[], decoded)
      const problem = cell === null ? null : aggregates.disagreement(decoded, cell)
      return problem === null ? null : `${at}: ${problem}`
    } catch (error) {
      return `${at}: ${messageOf(error)}`
    }
  }
  const named = new Set<string>()
  const clock = then<SourceClockSnapshot>(
    shaped({ name, lastSeen: reading, highestSeq: optional(whole), lastPrefixTs: reading, ahead: listOf(shaped([atLeast(1), start])), ids: listOf(shaped([name, start])) }),
    (s) => {
      const problem = clockEntryProblem({ ...s, source: s.name } as ClockEntry)
      if (problem !== null) return `: ${problem}`
      // Two clocks of one name would share a slot with the next new source's.
      if (named.has(s.name)) return `.name: expected a source named once, got ${shown(s.name)} again`
      named.add(s.name)
      return null
    },
  )
  const fragment = then<[string, number, Cell, unknown]>(shaped([name, start, cell, optional(stateList)]), (f) =>
    states(f[3], f[2].count, '[3]', { count: f[2].count, start: f[1], maxTs: f[2].maxTs }),
  )
  const window = then<WindowSnapshot>(
    shaped({
      window: spec,
      key,
      start,
      end: number,
      fired: flag,
      final: flag,
      revision,
      basis: oneOf(BASES),
      basisEnd: number,
      emitted: nullable(result),
      history: listOf(result),
      cells: listOf(shaped([name, cell])),
      fragments: listOf(fragment),
      panes: optional(whole),
      onTimePanes: optional(whole),
      dirty: optional(flag),
      timerAt: optional(timer),
      timerSeq: optional(whole),
      pending: optional(nullable(cellOf(false))),
      pendingStates: optional(stateList),
      whole: optional(flag),
    }),
    (w) => {
      const spec = specs.get(w.window) as WindowSpec
      if (!onGrid(spec, w.start, w.end, true)) return `: expected a window of ${spec.id}, got [${w.start}, ${w.end})`
      const fragment = twice(w.fragments, ([source, start]) => fragmentId(source, start), "source's fragment")
      if (fragment !== null) return `.fragments${fragment}`
      // A format-1 window's cells are restored into the slice at its start.
      if (spec.kind !== 'session') {
        for (let k = 0; k < w.cells.length; k++) {
          const c = (w.cells[k] as WindowSnapshot['cells'][number])[1]
          if (!cellInSlice(c.count, c.maxTs, w.start, sliceLength(spec))) return `.cells[${k}][1]: ${outsideSlice(c, w.start, sliceLength(spec))}`
        }
      }
      if (w.pending == null) return null
      // A discarding part keeps no event time: its states count no more values than it does, and
      // a fixed window's lie in it (a session's may not: a peer's tombstone can shrink it).
      const fixed = spec.kind !== 'session'
      const events = { count: w.pending.count, start: fixed ? w.start : Number.NEGATIVE_INFINITY, maxTs: fixed ? w.end : Number.POSITIVE_INFINITY }
      return states(w.pendingStates, 1, '.pendingStates', events)
    },
  )
  const sliceCell = then<[string, Cell, unknown]>(shaped([name, cell, optional(stateList)]), (c) => states(c[2], 1, '[2]'))
  const counters = (names: readonly string[]): Check => shaped(Object.fromEntries(names.map((n) => [n, optional(whole)])))
  return shaped({
    batch: whole,
    frontiers: shaped({
      watermark: number,
      strictWatermark: number,
      maxTs: number,
      proof: number,
      idleSources: whole,
      untrackedProof: optional(number),
      versionFloor: optional(whole),
      heldBy: optional(shaped({ proof: nullable(name), watermark: nullable(name) })),
    }),
    sources: listOf(clock),
    windows: then<readonly WindowSnapshot[]>(listOf(window), (windows) => windowsApart(windows, specs)),
    sessions: then(listOf(shaped({ window: spec, sealed: listOf(shaped([key, number])), tombstones: listOf(shaped([key, listOf(shaped([name, start, cell]))])) })), (indexes: readonly { window: string }[]) => twice(indexes, (i) => i.window, "spec's state")),
    slices: optional(
      then(
        listOf(then<SliceIndexSnapshot>(shaped({ window: spec, slices: listOf(shaped([key, start, listOf(shaped([number, listOf(sliceCell)]))])) }), (s) => slicesOffGrid(specs.get(s.window) as WindowSpec, s) ?? slicesTwice(s) ?? sliceCellsProblem(specs.get(s.window) as WindowSpec, s, aggregates))),
        (indexes: readonly SliceIndexSnapshot[]) => twice(indexes, (i) => i.window, "spec's state"),
      ),
    ),
    timerSeq: optional(whole),
    futureSources: optional(listOf(shaped({ source: name, count: whole, lastTs: start }))),
    lateLane: shaped({
      entries: listOf(
        shaped({
          // Refused at ingest for another reason than being invalid: valid by ingest's rules.
          event: (event) => {
            const reason = invalidReason(event)
            return reason === null ? null : `: ${describeInvalid(reason, event)}`
          },
          window: optional(name),
          reason: oneOf(ANOMALY_REASONS),
        }),
      ),
      trimmed: whole,
      total: whole,
    }),
    counts: counters([...Object.keys(target.counts), 'corrections']),
    anomalies: counters(Object.keys(target.anomalies)),
    dedup: shaped({ entries: whole, atLastPurge: whole }),
  })
}

/**
 * Whether `[start, end)` lies on the grid of `spec`: as a `window` of it (the index finds fixed
 * windows by the ordinal of their end: one off the grid was never found again, and the watermark
 * passing it looped for ever), or as a slice and the end of a window holding it. A session ends
 * after it starts.
 */
function onGrid(spec: WindowSpec, start: number, end: number, window: boolean): boolean {
  if (spec.kind === 'session') return start < end && end < Number.POSITIVE_INFINITY
  const unit = sliceLength(spec)
  const cumulating = spec.kind === 'cumulating'
  // The end of the last window holding the slice: a sliding spec's starts at the slice, a cumulating one's at its period.
  const reach = (cumulating ? alignedStart(start, spec.size) : start) + spec.size
  return alignedStart(start, window && cumulating ? spec.size : unit) === start && alignedStart(end, unit) === end && start < end && (window && !cumulating ? end === reach : end <= reach)
}

/** Why the slices of a fixed spec are off its grid, or null: each part is named by the end of the first window holding it. */
function slicesOffGrid(spec: WindowSpec, index: SliceIndexSnapshot): string | null {
  for (let i = 0; i < index.slices.length; i++) {
    const [, start, parts] = index.slices[i] as SliceIndexSnapshot['slices'][number]
    for (const [end] of parts) if (!onGrid(spec, start, end, false)) return `.slices[${i}]: expected a slice of ${spec.id}, got one at ${start} counted from the window ending at ${end}`
  }
  return null
}

/**
 * Why a fixed spec's slice cells cannot be restored, or null: as peers' cells, each must lie in its
 * slice (`cellInSlice`) and its aggregate states must agree with it (`AggregateSet.disagreement`,
 * on the states decoded by the checks before). Restored, a cell past its slice would count in
 * windows it is no part of, and a `latest` past its cell's last event outrank every later event.
 */
function sliceCellsProblem(spec: WindowSpec, index: SliceIndexSnapshot, aggregates: AggregateSet | null): string | null {
  if (spec.kind === 'session') return null
  const unit = sliceLength(spec)
  for (let i = 0; i < index.slices.length; i++) {
    const [, start, parts] = index.slices[i] as SliceIndexSnapshot['slices'][number]
    for (let p = 0; p < parts.length; p++) {
      const cells = (parts[p] as (typeof parts)[number])[1]
      for (let c = 0; c < cells.length; c++) {
        const [, cell, bytes] = cells[c] as (typeof cells)[number]
        const at = `.slices[${i}][2][${p}][1][${c}]`
        if (!cellInSlice(cell.count, cell.maxTs, start, unit)) return `${at}[1]: ${outsideSlice(cell, start, unit)}`
        const decoded = aggregates === null || bytes === undefined ? undefined : checkpointStates.get(bytes)
        const problem = decoded === undefined ? null : (aggregates as AggregateSet).disagreement(decoded, { count: cell.count, start, maxTs: cell.maxTs })
        if (problem !== null) return `${at}[2]: ${problem}`
      }
    }
  }
  return null
}

/** What a cell whose last event lies outside its slice is refused with. */
function outsideSlice(cell: Cell, start: number, unit: number): string {
  return `expected a cell of the slice [${start}, ${start + unit}), got one whose last event is at ${cell.maxTs}`
}

/**
 * Where `items` lists an identity a second time, as `[i]: the <noun> at [first] listed again`, or
 * null. Restored, an item listed twice counts twice, or stops the engine (a cell put into a part
 * that holds it already).
 */
function twice<T>(items: readonly T[], identity: (item: T) => unknown, noun: string): string | null {
  if (items.length < 2) return null
  const seen = new Map<unknown, number>()
  for (let i = 0; i < items.length; i++) {
    const id = identity(items[i] as T)
    const first = seen.get(id)
    if (first !== undefined) return `[${i}]: the ${noun} at [${first}] listed again`
    seen.set(id, i)
  }
  return null
}

/**
 * Why a checkpoint's windows cannot stand side by side, or null: a window listed twice (found by
 * what its index finds it by: a fixed window's end, as a cumulating spec's share starts; a
 * session's start), or two sessions of one key that overlap.
 */
function windowsApart(windows: readonly WindowSnapshot[], specs: ReadonlyMap<string, WindowSpec>): string | null {
  const sessions = new Map<string, number[]>()
  const problem = twice(
    windows.map((w, i) => {
      const session = (specs.get(w.window) as WindowSpec).kind === 'session'
      const series = `${w.window}\u0000${w.key}`
      if (session) {
        const list = sessions.get(series)
        if (list === undefined) sessions.set(series, [i])
        else list.push(i)
      }
      return `${series}\u0000${session ? w.start : w.end}`
    }),
    (id) => id,
    'window',
  )
  if (problem !== null) return problem
  for (const list of sessions.values()) {
    list.sort((a, b) => (windows[a] as WindowSnapshot).start - (windows[b] as WindowSnapshot).start)
    for (let k = 1; k < list.length; k++) {
      const [before, after] = [windows[list[k - 1] as number] as WindowSnapshot, windows[list[k] as number] as WindowSnapshot]
      if (before.end > after.start) return `[${list[k]}]: a session of the key of the one at [${list[k - 1]}], overlapping it: [${after.start}, ${after.end}) and [${before.start}, ${before.end})`
    }
  }
  return null
}

/** Why a spec's slices cannot be restored together, or null: a slice, a part of one or a source's cell in a part listed twice. */
function slicesTwice(index: SliceIndexSnapshot): string | null {
  const slices = twice(index.slices, ([key, start]) => `${start}\u0000${key}`, 'slice')
  if (slices !== null) return `.slices${slices}`
  for (let i = 0; i < index.slices.length; i++) {
    const parts = (index.slices[i] as SliceIndexSnapshot['slices'][number])[2]
    const part = twice(parts, ([end]) => end, 'part')
    if (part !== null) return `.slices[${i}][2]${part}`
    for (let p = 0; p < parts.length; p++) {
      const cell = twice((parts[p] as (typeof parts)[number])[1], ([source]) => source, "source's cell")
      if (cell !== null) return `.slices[${i}][2][${p}][1]${cell}`
    }
  }
  return null
}

/** A value as an error message shows it: text quoted (and cut short), objects by kind. */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
  return typeof value === 'object' && value !== null ? (Array.isArray(value) ? 'an array' : 'an object') : String(value)
}
